"""WHERE with one input: the coordinates of the condition's true (non-zero) elements.

The output's shape, ``[count, rank]`` int64, depends on the data: its slot is sized for every
element being true (the bounded shape rule in :mod:`gpulite.graph.shape_rules.logic`), and each
invoke writes the first ``count`` rows, in row-major order as LiteRT's ``where.cc``, and records
``(count, rank)`` as the tensor's shape. (``np.argwhere`` allocates its result at each invoke: its
size is the data's.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

# The condition types LiteRT's where.cc takes (a number is true when it is not zero).
_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.float32, np.int8, np.uint8, np.int32, np.int64, np.uint32))


@register_kernel(Op.WHERE, "cpu")
def where(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Coordinates of the true elements of input 0 as ``[count, rank]`` int64 rows."""
    arity(node, 1)
    cond, out = ctx.input(0), ctx.output(0)
    if cond.dtype not in _DTYPES:
        raise unsupported(node, f"condition dtype {cond.dtype}; expected one of {', '.join(map(str, _DTYPES))}")
    check_out(node, out, (cond.size, cond.ndim), np.int64)
    record = ctx.extent_setter(0)
    flat = out.reshape(-1)

    def run() -> None:
        found = np.argwhere(cond)
        flat[:found.size] = found.reshape(-1)
        record(found.shape)
    return run
