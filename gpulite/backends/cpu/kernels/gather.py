"""GATHER (batch_dims 0) and ARG_MAX / ARG_MIN.

GATHER indices may be computed at run time, so they are range-checked each run (TFLite
fails the invoke on an index outside ``[0, dim)``; numpy would silently wrap negative
ones). Constant indices are checked once. Indices are copied into a preallocated ``intp``
buffer so ``np.take`` neither converts nor buffers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_kernel(Op.GATHER, "cpu")
def gather(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``out = params.take(indices, axis)`` with TFLite's bounds check."""
    params, idx, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if getattr(node.options, "batch_dims", 0) != 0:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"batch_dims {node.options.batch_dims}; expected 0")
    if idx.dtype.kind not in "iu":
        raise ShapeError(f"{layout.where(node)}indices have dtype {idx.dtype}; expected int32 or int64")
    if params.dtype.kind in "OSU":
        raise UnsupportedOpError(node.op, node.index, "cpu", "string tensors")
    axis = layout.normalize_axis(getattr(node.options, "axis", 0), params.ndim, node)
    n = params.shape[axis]
    expected = params.shape[:axis] + idx.shape + params.shape[axis + 1:]
    if out.shape != expected or out.dtype != params.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; gathering {list(idx.shape)} "
                         f"indices from {list(params.shape)} on axis {axis} gives {list(expected)} {params.dtype}")

    def bad(lo: int, hi: int) -> str:
        return f"{layout.where(node)}gather index out of range: indices span [{lo}, {hi}], expected [0, {n})"

    if ctx.const(1) is not None:
        fixed = np.asarray(ctx.const(1), dtype=np.intp)
        if fixed.size and (fixed.min() < 0 or fixed.max() >= n):
            raise ShapeError(bad(int(fixed.min()), int(fixed.max())))

        def run_const() -> None:
            np.take(params, fixed, axis=axis, out=out, mode="clip")
        return run_const
    buf = np.empty(idx.shape, np.intp)

    def run() -> None:
        if idx.size:
            lo, hi = idx.min(), idx.max()
            if lo < 0 or hi >= n:
                raise IndexError(bad(int(lo), int(hi)))
        np.copyto(buf, idx)
        np.take(params, buf, axis=axis, out=out, mode="clip")
    return run


def _arg(fn: Callable[..., np.ndarray]):
    def factory(node: Node, ctx: CpuContext) -> Callable[[], None]:
        src, out = ctx.input(0), ctx.output(0)
        axis = layout.ints(ctx.const(1)) if ctx.const(1) is not None else []
        if len(axis) != 1:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"expected one constant axis, got "
                                     f"{axis or 'a run-time value'}")
        a = layout.normalize_axis(axis[0], src.ndim, node)
        want = {2: np.int32, 4: np.int64}.get(int(getattr(node.options, "output_type", 4)))
        expected = src.shape[:a] + src.shape[a + 1:]
        if want is None or out.dtype != want or out.shape != expected:
            raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; expected {list(expected)} "
                             f"of output_type {getattr(node.options, 'output_type', None)} (int32 or int64)")
        if src.shape[a] == 0:
            raise ShapeError(f"{layout.where(node)}cannot take {node.op} over empty axis {a}")
        # numpy writes indices only into an intp array; int32 outputs go through a buffer.
        direct = out.dtype == np.intp
        buf = out if direct else np.empty(expected, np.intp)

        def run() -> None:
            fn(src, axis=a, out=buf)  # first occurrence on ties, as TFLite's strict compare
            if not direct:
                np.copyto(out, buf, casting="unsafe")
        return run
    return factory


register_kernel(Op.ARG_MAX, "cpu", _arg(np.argmax))
register_kernel(Op.ARG_MIN, "cpu", _arg(np.argmin))
