"""GATHER (with batch_dims) and ARG_MAX / ARG_MIN.

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
    if idx.dtype.kind not in "iu":
        raise ShapeError(f"{layout.where(node)}indices have dtype {idx.dtype}; expected int32 or int64")
    if params.dtype.kind in "OSU":
        raise UnsupportedOpError(node.op, node.index, "cpu", "string tensors")
    axis, batch_dims, expected = layout.gather_shape(node, params.shape, idx.shape)
    n = params.shape[axis]
    if out.shape != expected or out.dtype != params.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; gathering {list(idx.shape)} "
                         f"indices from {list(params.shape)} on axis {axis} gives {list(expected)} {params.dtype}")

    def bad(lo: int, hi: int) -> IndexError:
        return layout.gather_index_error(node, lo, hi, n)

    if batch_dims:
        return _batched(node, params, idx, out, axis, batch_dims, bad)
    if ctx.const(1) is not None:
        fixed = np.asarray(ctx.const(1), dtype=np.intp)
        if fixed.size and (fixed.min() < 0 or fixed.max() >= n):
            raise ShapeError(str(bad(int(fixed.min()), int(fixed.max()))))

        def run_const() -> None:
            np.take(params, fixed, axis=axis, out=out, mode="clip")
        return run_const
    buf = np.empty(idx.shape, np.intp)

    def run() -> None:
        if idx.size:
            lo, hi = idx.min(), idx.max()
            if lo < 0 or hi >= n:
                raise bad(int(lo), int(hi))
        np.copyto(buf, idx)
        np.take(params, buf, axis=axis, out=out, mode="clip")
    return run


def _batched(node: Node, params, idx, out, axis: int, bd: int, bad) -> Callable[[], None]:
    """GATHER with ``batch_dims`` bd: batch b of the indices picks from batch b of the params."""
    b = int(np.prod(params.shape[:bd], dtype=np.int64))
    outer = int(np.prod(params.shape[bd:axis], dtype=np.int64))
    inner = int(np.prod(params.shape[axis + 1:], dtype=np.int64))
    n, k = params.shape[axis], int(np.prod(idx.shape[bd:], dtype=np.int64))
    p = params.reshape(b, outer, n, inner)
    i = idx.reshape(b, k)
    dst = out.reshape(b, outer, k, inner)
    rows, cols = np.arange(b)[:, None, None], np.arange(outer)[None, :, None]

    def run() -> None:
        if idx.size:
            lo, hi = idx.min(), idx.max()
            if lo < 0 or hi >= n:
                raise bad(int(lo), int(hi))
        np.copyto(dst, p[rows, cols, i[:, None, :]])
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
            if src.dtype.kind == "f":
                _skip_nan(fn, src, a, buf)
            if not direct:
                np.copyto(out, buf, casting="unsafe")
        return run
    return factory


def _skip_nan(fn, src: np.ndarray, a: int, out: np.ndarray) -> None:
    """As LiteRT, NaN is never the extreme (numpy picks the first NaN): indices again where a
    row holds NaN, with NaN as the worst value; a row of NaN (or of NaN and the worst value
    only) gives its first other element, or 0."""
    nan = np.isnan(src)
    if not nan.any():
        return
    worst = -np.inf if fn is np.argmax else np.inf
    fn(np.where(nan, worst, src), axis=a, out=out)
    picked_nan = np.take_along_axis(nan, np.expand_dims(out, a), a).squeeze(a)
    if picked_nan.any():
        out[picked_nan] = np.argmax(~nan, axis=a)[picked_nan]


register_kernel(Op.ARG_MAX, "cpu", _arg(np.argmax))
register_kernel(Op.ARG_MIN, "cpu", _arg(np.argmin))
