"""WGSL kernels, one module per op family; each registers with ``@register_kernel(op, "webgpu")``.

A factory takes ``(node, ctx: GpuContext)`` and returns a ``Program`` or a list of them
(see :mod:`gpulite.backends.webgpu.context` and docs/webgpu.md).
"""
