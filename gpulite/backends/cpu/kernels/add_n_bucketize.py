"""ADD_N and BUCKETIZE, as LiteRT's add_n.cc and bucketize.cc.

ADD_N adds its inputs (float32 or int32, one shape) left to right. BUCKETIZE gives each value
the number of ``boundaries`` (sorted) that are <= it, i.e. ``std::upper_bound``'s position;
integer and float32 inputs compare as float32 against the float32 boundaries (C++'s usual
conversions), float64 inputs as float64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_ADD_N = (np.dtype(np.float32), np.dtype(np.int32))
_BUCKETIZE = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64))


@register_kernel(Op.ADD_N, "cpu")
def add_n(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``x0 + x1 + ... + xn``, summed in input order."""
    n = len(node.inputs)
    arity(node, tuple(range(2, max(n, 2) + 1)))
    xs, out = [ctx.input(i) for i in range(n)], ctx.output(0)
    if out.dtype not in _ADD_N or any(x.dtype != out.dtype for x in xs):
        raise unsupported(node, f"expected float32 or int32 inputs and output of one type, got "
                          f"{[str(x.dtype) for x in xs]} -> {out.dtype}")
    if any(x.shape != xs[0].shape for x in xs):
        raise unsupported(node, f"inputs must share one shape (LiteRT's add_n.cc), got {[list(x.shape) for x in xs]}")
    check_out(node, out, xs[0].shape)

    def run() -> None:
        np.add(xs[0], xs[1], out=out)
        for x in xs[2:]:
            np.add(out, x, out=out)
    return run


@register_kernel(Op.BUCKETIZE, "cpu")
def bucketize(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The bucket (int32) of each value among the sorted boundaries."""
    arity(node, 1)
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype not in _BUCKETIZE or out.dtype != np.int32:
        raise unsupported(node, f"expected an input among {', '.join(map(str, _BUCKETIZE))} and an int32 output, "
                          f"got {x.dtype} -> {out.dtype}")
    bounds = np.asarray(node.options.boundaries if node.options is not None else (), np.float32)
    if np.any(np.diff(bounds) < 0):
        raise unsupported(node, f"boundaries must be sorted (bucketize.cc checks it), got {bounds.tolist()[:10]}")
    check_out(node, out, x.shape)
    as_type = np.float64 if x.dtype == np.float64 else np.float32

    def run() -> None:
        out[...] = np.searchsorted(bounds.astype(as_type), x.astype(as_type), side="right")
    return run
