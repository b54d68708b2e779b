"""BATCH_MATMUL, float: ``np.matmul`` on (optionally transposed) views, batch dims broadcast
(hybrid, a float LHS by a constant int8 RHS, in :mod:`.hybrid`).

``adj_x``/``adj_y`` transpose the last two axes of an operand; a transposed view costs
nothing and numpy's matmul passes it to BLAS as a transpose flag.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.hybrid import hybrid_batch_matmul
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.model.opdefs import Op


@register_kernel(Op.BATCH_MATMUL, "cpu")
def batch_matmul(node, ctx):
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    hybrid = a.dtype == out.dtype == np.float32 and b.dtype == np.int8
    if not (a.dtype == b.dtype == out.dtype == np.float32 or hybrid):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float32, or a float32 LHS by an int8 "
                                 f"RHS, is supported; got {a.dtype} x {b.dtype} -> {out.dtype}")
    if a.ndim < 2 or b.ndim < 2:
        raise ShapeError(f"node {node.index} (BATCH_MATMUL): operands must be at least 2-D, "
                         f"got {list(a.shape)} and {list(b.shape)}")
    o = node.options
    av = np.swapaxes(a, -1, -2) if getattr(o, "adj_x", False) else a
    bv = np.swapaxes(b, -1, -2) if getattr(o, "adj_y", False) else b
    try:
        shape = (*np.broadcast_shapes(av.shape[:-2], bv.shape[:-2]), av.shape[-2], bv.shape[-1])
    except ValueError:
        shape = None
    if shape is None or av.shape[-1] != bv.shape[-2] or shape != out.shape:
        raise ShapeError(f"node {node.index} (BATCH_MATMUL): {list(a.shape)} x {list(b.shape)} with "
                         f"adj_x={getattr(o, 'adj_x', False)}, adj_y={getattr(o, 'adj_y', False)} "
                         f"does not give the output shape {list(out.shape)}")
    if hybrid:
        return hybrid_batch_matmul(node, ctx, av, bv)
    if getattr(o, "adj_y", False) and ctx.const(1) is not None:
        bv = np.ascontiguousarray(bv)  # constant: transpose once so BLAS reads it row-major

    def run() -> None:
        np.matmul(av, bv, out=out)
    return run
