"""numpy kernels, one module per op family; each registers with ``@register_kernel(op, "cpu")``."""
