"""SCATTER_ND, SPARSE_TO_DENSE, MATRIX_DIAG, MATRIX_SET_DIAG and DILATE.

SCATTER_ND starts from zeros of the constant ``shape`` and adds each update slice at its
index, in index order (duplicates accumulate, integers wrapping; for bool, OR). As in LiteRT
2.3's reference kernel every index is checked against its dimension: one outside fails the
invoke, even where its flat offset would land inside the output.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.graph.layout import scatter_nd_index_error, where
from gpulite.graph.shape_rules.tensor_ops import dilated_shape, scatter_nd_shape, sparse_to_dense_shape
from gpulite.model.opdefs import Op

_SCATTER_UPDATES = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int32, np.int64, np.bool_))


@register_kernel(Op.SCATTER_ND, "cpu")
def scatter_nd(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Zeros of ``shape`` plus ``updates`` scattered at ``indices``."""
    arity(node, 3)
    idx, upd, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if idx.dtype != np.int32 or ctx.in_info(2).dtype != idx.dtype or upd.dtype not in _SCATTER_UPDATES \
            or out.dtype != upd.dtype:
        raise unsupported(node, f"expected int32 indices and shape (LiteRT's scatter_nd.cc) and updates among "
                          f"{', '.join(map(str, _SCATTER_UPDATES))} (output of the same type); got {idx.dtype}, "
                          f"{ctx.in_info(2).dtype} shape, {upd.dtype} -> {out.dtype}")
    if ctx.const(2) is None:
        raise unsupported(node, "shape is computed at run time; gpulite needs it constant (the output's shape)")
    shape = scatter_nd_shape(node, idx.shape, upd.shape, ctx.const(2))
    check_out(node, out, shape)
    k = idx.shape[-1]
    strides = np.array([math.prod(shape[j + 1:]) for j in range(k)], np.int64)
    slice_size = math.prod(shape[k:])
    lanes = np.arange(slice_size, dtype=np.int64)
    flat_out, flat_upd = out.reshape(-1), upd.reshape(-1, slice_size)
    dims = np.array(shape[:k], np.int64)

    def run() -> None:
        rows = idx.reshape(-1, k).astype(np.int64)
        bad = ((rows < 0) | (rows >= dims)).any(axis=1)
        pos = rows @ strides
        if bad.any():
            raise scatter_nd_index_error(node, rows[int(np.argmax(bad))].tolist(), shape)
        out.fill(0)
        if out.dtype == np.bool_:
            flat_out[(pos[:, None] + lanes).reshape(-1)[flat_upd.reshape(-1)]] = True
        else:
            np.add.at(flat_out, pos[:, None] + lanes, flat_upd)
    return run


@register_kernel(Op.MATRIX_DIAG, "cpu")
def matrix_diag(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Square matrices ``[..., n, n]`` with the input ``[..., n]`` on their diagonal, zeros elsewhere."""
    arity(node, 1)
    d, out = ctx.input(0), ctx.output(0)
    if out.dtype != d.dtype or d.ndim < 1:
        raise unsupported(node, f"expected an input of rank >= 1 and an output of its type, got {d.dtype} "
                          f"{list(d.shape)} -> {out.dtype}")
    check_out(node, out, (*d.shape, d.shape[-1]))
    diagonal = np.einsum("...ii->...i", out)  # a writable view of the output's diagonals

    def run() -> None:
        out.fill(0)
        np.copyto(diagonal, d)
    return run


@register_kernel(Op.MATRIX_SET_DIAG, "cpu")
def matrix_set_diag(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The input matrices ``[..., m, n]`` with their main diagonal replaced by ``[..., min(m, n)]``."""
    arity(node, 2)
    x, d, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if x.ndim < 2 or d.shape != (*x.shape[:-2], min(x.shape[-2:])) or out.dtype != x.dtype:
        raise unsupported(node, f"expected matrices [..., m, n] and diagonals [..., min(m, n)] of one type, got "
                          f"{x.dtype} {list(x.shape)} and {d.dtype} {list(d.shape)} -> {out.dtype}")
    check_out(node, out, x.shape)
    diagonal = np.einsum("...ii->...i", out[..., :min(x.shape[-2:]), :min(x.shape[-2:])])

    def run() -> None:
        np.copyto(out, x)
        np.copyto(diagonal, d)
    return run


_SPARSE_VALUES = tuple(np.dtype(t) for t in (np.float32, np.int32, np.int64, np.int8, np.uint8))


@register_kernel(Op.SPARSE_TO_DENSE, "cpu")
def sparse_to_dense(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``default_value`` everywhere but at ``indices``, which get ``values`` (one each, or one
    scalar for all; a repeated index keeps the last). ``output_shape`` must be constant."""
    arity(node, 4)
    idx, values, default, out = ctx.input(0), ctx.input(2), ctx.input(3), ctx.output(0)
    if idx.dtype not in (np.int32, np.int64) or ctx.in_info(1).dtype not in (np.int32, np.int64) or \
            values.dtype not in _SPARSE_VALUES or default.dtype != values.dtype or out.dtype != values.dtype:
        raise unsupported(node, f"expected int32/int64 indices and shape and values, default and output of one type "
                          f"among {', '.join(map(str, _SPARSE_VALUES))}; got {idx.dtype}, {ctx.in_info(1).dtype}, "
                          f"{values.dtype}, {default.dtype} -> {out.dtype}")
    if ctx.const(1) is None:
        raise unsupported(node, "output_shape is computed at run time; gpulite needs it constant (the output's shape)")
    shape = sparse_to_dense_shape(node, idx.shape, ctx.const(1), values.shape, default.size)
    check_out(node, out, shape)
    rank = len(shape)
    n = 1 if idx.ndim == 0 else idx.shape[0]

    def run() -> None:
        at = idx.reshape(n, rank if idx.ndim == 2 else 1).astype(np.int64)
        bad = (at < 0) | (at >= np.array(shape, np.int64))
        if bad.any():
            i = int(np.argmax(bad.any(axis=1)))
            raise IndexError(f"{where(node)}sparse index {at[i].tolist()} is outside the output of shape {list(shape)}")
        out.fill(default.reshape(()))
        out[tuple(at.T)] = values  # in index order: the last of repeated indices wins, as in LiteRT
    return run


@register_kernel(Op.DILATE, "cpu")
def dilate(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The input spread ``dilations[i]`` apart along each dim, ``padding_value`` in between
    (LiteRT's dilate.cc): output dims ``(d - 1) * dilation + 1``. ``dilations`` must be constant."""
    arity(node, 3)
    x, pad, out = ctx.input(0), ctx.input(2), ctx.output(0)
    if pad.dtype != x.dtype or out.dtype != x.dtype or ctx.in_info(1).dtype != np.int32 or pad.size != 1:
        raise unsupported(node, f"expected input, scalar padding value and output of one type and int32 dilations, "
                          f"got {x.dtype}, {pad.dtype} {list(pad.shape)}, {ctx.in_info(1).dtype} -> {out.dtype}")
    if ctx.const(1) is None:
        raise unsupported(node, "dilations are computed at run time; gpulite needs them constant (the output's shape)")
    shape, steps = dilated_shape(node, x.shape, ctx.const(1))
    check_out(node, out, shape)
    spread = out[tuple(slice(None, None, s) for s in steps)]

    def run() -> None:
        out.fill(pad.reshape(()))
        np.copyto(spread, x)
    return run
