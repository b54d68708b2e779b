"""The kernel registry: one kernel factory per (op, backend).

A kernel factory is called once at ``allocate_tensors`` with the node and a backend
context, does all the per-model work there (weight layout, shape checks, buffers), and
returns the callable that runs the op. Kernel modules register with
``@register_kernel(Op.X, backend)`` and are discovered from each backend's ``kernels``
package, never listed by hand. The op must be an :class:`~gpulite.model.opdefs.Op` (or its
name) or a custom op declared with :func:`~gpulite.model.opdefs.declare_custom_op`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from gpulite.model.opdefs import OpName, op_named, op_of

KernelFactory = Callable[..., Any]
_KERNELS: dict[tuple[OpName, str], KernelFactory] = {}
# (op, backend) -> [(applies, factory)]: kernels for some nodes of an op (register_case)
_CASES: dict[tuple[OpName, str], list[tuple[Callable[..., bool], KernelFactory]]] = {}
_INT8: set[tuple[OpName, str]] = set()  # (op, backend) whose kernel runs int8-quantized tensors
_DISCOVERED: set[str] = set()
_PACKAGES = {"cpu": "gpulite.backends.cpu.kernels", "webgpu": "gpulite.backends.webgpu.kernels"}


def register_kernel(op: str, backend: str, fn: KernelFactory | None = None, *, int8: bool = False):
    """Register ``fn`` as the kernel of ``op`` on ``backend``; usable as a decorator.

    ``int8=True`` declares that the kernel runs int8-quantized tensors (:func:`declare_int8`).

    Raises ``ValueError`` if ``op`` is not an op gpulite knows (a TFLite builtin, a MediaPipe
    custom op, or one declared with ``gpulite.declare_custom_op``; the message suggests the
    closest names), or if that pair already has a kernel (use :func:`unregister_kernel` first).
    """
    name = op_named(op)
    if int8:
        declare_int8(backend, name)

    def deco(f: KernelFactory) -> KernelFactory:
        key = (name, backend)
        if key in _KERNELS and _KERNELS[key] is not f:
            raise ValueError(f"kernel for op {op} on backend {backend!r} is already registered")
        _KERNELS[key] = f
        return f
    return deco(fn) if fn is not None else deco


def register_case(op: str, backend: str, applies: Callable[..., bool]):
    """Decorator: a kernel for the nodes of ``op`` on ``backend`` for which ``applies(node, ctx)``
    holds (e.g. grouped convolutions), so a case lives in its own module beside the op's kernel.
    :func:`get_kernel` then returns a factory running the first case that applies, else the
    op's kernel (registered with :func:`register_kernel`, which the case needs)."""
    name = op_named(op)

    def deco(f: KernelFactory) -> KernelFactory:
        cases = _CASES.setdefault((name, backend), [])
        if all(g is not f for _, g in cases):
            cases.append((applies, f))
        return f
    return deco


def _with_cases(kernel: KernelFactory, cases: tuple[tuple[Callable[..., bool], KernelFactory], ...]) -> KernelFactory:
    def factory(node: Any, ctx: Any) -> Any:
        for applies, case in cases:
            if applies(node, ctx):
                return case(node, ctx)
        return kernel(node, ctx)
    return factory


def unregister_kernel(op: str, backend: str) -> None:
    _KERNELS.pop((op_of(op), backend), None)


def discover(backend: str) -> None:
    pkg = _PACKAGES.get(backend)
    if pkg is None or backend in _DISCOVERED:
        return
    mod = importlib.import_module(pkg)
    for m in pkgutil.iter_modules(mod.__path__):
        importlib.import_module(f"{pkg}.{m.name}")
    _DISCOVERED.add(backend)


def get_kernel(op: str, backend: str) -> KernelFactory | None:
    discover(backend)
    key = (op_of(op), backend)
    kernel, cases = _KERNELS.get(key), _CASES.get(key)
    return _with_cases(kernel, tuple(cases)) if kernel is not None and cases else kernel


def get_kernels_for_backend(backend: str) -> dict[OpName, KernelFactory]:
    discover(backend)
    return {op: f for (op, b), f in _KERNELS.items() if b == backend}


def copy_kernels(src: str, dst: str) -> int:
    """Register every kernel of backend ``src`` for ``dst`` too (seed 000's ``humangl`` pattern)."""
    n = 0
    for op, f in get_kernels_for_backend(src).items():
        if (op, dst) not in _KERNELS:
            _KERNELS[(op, dst)] = f
            n += 1
    return n


def declare_int8(backend: str, *ops: str) -> None:
    """Declare that ``backend``'s kernels of ``ops`` run int8-quantized tensors (what ``gpulite
    ops`` reports; a kernel without the declaration shows as float only). Kernels declare it
    with ``register_kernel(..., int8=True)`` or a backend lists them in one call."""
    for op in ops:
        _INT8.add((op_named(op), backend))


def takes_int8(op: str, backend: str) -> bool:
    """Whether ``backend``'s kernel of ``op`` is declared to run int8-quantized tensors."""
    discover(backend)
    return (op_of(op), backend) in _INT8
