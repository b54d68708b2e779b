"""GATHER_ND and ONE_HOT.

GATHER_ND's indices may be computed at run time, so they are range-checked on every invoke
(LiteRT fails the invoke on an index outside its dim; numpy would wrap negative ones);
constant indices are checked once at allocate. ONE_HOT writes ``on_value`` where an index
equals the position along the new axis and ``off_value`` elsewhere (indices outside
``[0, depth)`` give a row of ``off_value``, as in LiteRT).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph import data_layout as dl
from gpulite.graph.ir import Node
from gpulite.graph.layout import gather_nd_index_error, where
from gpulite.model.opdefs import Op

_GATHER_ND_INDEX = tuple(np.dtype(t) for t in (np.int16, np.int32, np.int64))
_ONE_HOT_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_))


@register_kernel(Op.GATHER_ND, "cpu")
def gather_nd(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``out[i...] = params[indices[i...]]``, the last indices dim indexing the leading params dims."""
    arity(node, 2)
    params, idx, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if idx.dtype not in _GATHER_ND_INDEX or params.dtype.kind in "OSU" or out.dtype != params.dtype:
        raise unsupported(node, f"expected int16/int32/int64 indices and numeric params of the output's dtype, got "
                          f"{params.dtype} params, {idx.dtype} indices -> {out.dtype}")
    check_out(node, out, dl.gather_nd_shape(node, params.shape, idx.shape))
    k = idx.shape[-1]
    bounds = np.array(params.shape[:k], np.int64)

    def check(v: np.ndarray) -> None:
        bad = (v < 0) | (v >= bounds)
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0][:-1])
            raise gather_nd_index_error(node, v[at].tolist(), list(at), bounds.tolist())

    if ctx.const(1) is not None:
        fixed = np.asarray(ctx.const(1), np.int64)
        try:
            check(fixed)
        except IndexError as e:
            raise ShapeError(str(e)) from None
        where_ = tuple(fixed[..., j] for j in range(k))

        def run_const() -> None:
            np.copyto(out, params[where_])
        return run_const

    def run() -> None:
        v = idx.astype(np.int64)
        check(v)
        np.copyto(out, params[tuple(v[..., j] for j in range(k))])
    return run


@register_kernel(Op.ONE_HOT, "cpu")
def one_hot(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """One-hot rows of the constant ``depth`` inserted at ``axis`` (-1: last)."""
    arity(node, 4)
    idx, out = ctx.input(0), ctx.output(0)
    on_i, off_i = ctx.in_info(2), ctx.in_info(3)
    if idx.dtype not in (np.int32, np.int64) or not (on_i.dtype == off_i.dtype == out.dtype) \
            or out.dtype not in _ONE_HOT_DTYPES:
        raise unsupported(node, f"expected int32/int64 indices and on/off values of the output's dtype among "
                          f"{', '.join(map(str, _ONE_HOT_DTYPES))}; got {idx.dtype} indices, {on_i.dtype}, "
                          f"{off_i.dtype} -> {out.dtype}")
    if np.prod(on_i.shape) != 1 or np.prod(off_i.shape) != 1:
        raise ShapeError(f"{where(node)}on_value and off_value must hold one value each, got shapes "
                         f"{list(on_i.shape)}, {list(off_i.shape)}")
    axis, shape = dl.one_hot_shape(node, idx.shape, ctx.const(1))
    check_out(node, out, shape)
    positions = np.arange(shape[axis]).reshape((-1,) + (1,) * (idx.ndim - axis))
    expanded = np.expand_dims(idx, axis)  # a view; broadcasts against positions
    on, off = ctx.input(2).reshape(()), ctx.input(3).reshape(())
    hot = np.empty(shape, np.bool_)

    def run() -> None:
        np.equal(expanded, positions, out=hot)
        out.fill(off)
        np.copyto(out, on, where=hot)
    return run
