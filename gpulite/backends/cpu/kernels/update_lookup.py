"""DYNAMIC_UPDATE_SLICE, REVERSE_SEQUENCE, EMBEDDING_LOOKUP(_SPARSE) and HASHTABLE_LOOKUP, as LiteRT's kernels.

DYNAMIC_UPDATE_SLICE copies the operand and writes ``update`` at the run-time start indices,
each clamped to ``[0, operand_dim - update_dim]``. REVERSE_SEQUENCE reverses, for each batch
entry ``b`` (along ``batch_dim``), the first ``seq_lengths[b]`` elements along ``seq_dim``.
EMBEDDING_LOOKUP gathers rows of ``value`` by int32 ids (an id outside the table fails the
invoke), dequantizing a dynamic-range (int8/uint8) table for a float32 output.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import embedding_index_error, normalize_axis, where
from gpulite.model.opdefs import Op

_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
_DUS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.bool_, np.int8, np.uint8, np.int16, np.uint16,
                                   np.int32, np.uint32, np.int64))
_REVERSE = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int16, np.int32, np.int64))  # no int8


@register_kernel(Op.DYNAMIC_UPDATE_SLICE, "cpu")
def dynamic_update_slice(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The operand with ``update`` written at the clamped start indices."""
    arity(node, 3)
    x, upd, start, out = ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)
    if x.dtype not in _DUS or upd.dtype != x.dtype or out.dtype != x.dtype or start.dtype not in _INDEX:
        raise unsupported(node, f"expected operand, update and output of one type among {', '.join(map(str, _DUS))} "
                          f"and int32/int64 start indices, got {x.dtype}, {upd.dtype}, {start.dtype} -> {out.dtype}")
    if start.shape != (x.ndim,) or upd.ndim != x.ndim or any(u > d for u, d in zip(upd.shape, x.shape, strict=True)):
        raise ShapeError(f"{where(node)}expected an update no larger than the operand {list(x.shape)} in each dim and "
                         f"{x.ndim} start indices, got update {list(upd.shape)}, start {list(start.shape)}")
    check_out(node, out, x.shape)
    room = np.array(x.shape, np.int64) - np.array(upd.shape, np.int64)

    def run() -> None:
        at = np.clip(start.astype(np.int64), 0, room)
        if out is not x:
            np.copyto(out, x)
        out[tuple(slice(int(a), int(a) + n) for a, n in zip(at, upd.shape, strict=True))] = upd
    return run


@register_kernel(Op.REVERSE_SEQUENCE, "cpu")
def reverse_sequence(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Reverse the leading ``seq_lengths[b]`` elements along ``seq_dim`` of each batch entry ``b``."""
    arity(node, 2)
    x, lengths, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if x.dtype not in _REVERSE or out.dtype != x.dtype or lengths.dtype not in _INDEX:
        raise unsupported(node, f"expected input and output of one type among {', '.join(map(str, _REVERSE))} and "
                          f"int32/int64 seq_lengths, got {x.dtype}, {lengths.dtype} -> {out.dtype}")
    seq = normalize_axis(int(node.options.seq_dim), x.ndim, node)
    batch = normalize_axis(int(node.options.batch_dim), x.ndim, node)
    if seq == batch or lengths.shape != (x.shape[batch],):
        raise ShapeError(f"{where(node)}expected seq_dim != batch_dim and one length per batch entry "
                         f"({x.shape[batch]}), got seq_dim {seq}, batch_dim {batch}, lengths {list(lengths.shape)}")
    check_out(node, out, x.shape)
    steps = np.arange(x.shape[seq])
    view = [1] * x.ndim

    def run() -> None:
        n = lengths.astype(np.int64)
        if np.any((n < 0) | (n > x.shape[seq])):
            raise ShapeError(f"{where(node)}seq_lengths {n.tolist()} must lie in [0, {x.shape[seq]}]")
        src = np.where(steps[None, :] < n[:, None], n[:, None] - 1 - steps[None, :], steps[None, :])  # [batch, seq]
        if batch > seq:
            src = src.T
        shape = list(view)
        shape[batch], shape[seq] = x.shape[batch], x.shape[seq]
        np.copyto(out, np.take_along_axis(x, np.broadcast_to(src.reshape(shape), x.shape), axis=seq))
    return run


@register_kernel(Op.EMBEDDING_LOOKUP, "cpu")
def embedding_lookup(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``out[i] = value[ids[i]]``; an int8/uint8 table with a float32 output is dequantized as
    LiteRT's ``EvalHybrid`` does: the stored bytes read as int8 (uint8 too) times the table's
    scale, or the row's scale for per-row (axis 0) quantization; the zero point must be 0."""
    arity(node, 2)
    ids, value, out = ctx.input(0), ctx.input(1), ctx.output(0)
    hybrid = value.dtype in (np.int8, np.uint8) and out.dtype == np.float32
    if ids.dtype != np.int32 or value.dtype.kind not in "fiub" or (out.dtype != value.dtype and not hybrid):
        raise unsupported(node, f"expected int32 ids and a table of the output's type (or an int8/uint8 table for a "
                          f"float32 output), got {ids.dtype} ids, {value.dtype} -> {out.dtype}")
    if ids.ndim != 1 or value.ndim < 2:
        raise ShapeError(f"{where(node)}expected 1-D ids and a table of rank >= 2, got {list(ids.shape)} and "
                         f"{list(value.shape)}")
    check_out(node, out, (ids.shape[0], *value.shape[1:]))
    rows = value.view(np.int8) if hybrid else value
    scale = _row_scales(node, ctx) if hybrid else None

    def run() -> None:
        bad = (ids < 0) | (ids >= value.shape[0])
        if bad.any():
            raise embedding_index_error(node, int(ids[np.argmax(bad)]), value.shape[0])
        if scale is None:
            np.take(value, ids, axis=0, out=out)
            return
        picked = np.take(rows, ids, axis=0).astype(np.float32)
        np.multiply(picked, scale[ids if scale.size > 1 else 0].reshape((-1,) + (1,) * (out.ndim - 1)), out=out)
    return run


def _row_scales(node: Node, ctx: CpuContext) -> np.ndarray:
    """The hybrid table's float32 scales: one, or one per row (quantized along axis 0)."""
    q = ctx.in_info(1).quant
    rows = ctx.in_info(1).shape[0]
    if q is None or q.scale.size not in (1, rows) or (q.scale.size > 1 and q.axis != 0) or np.any(q.zero_point != 0):
        raise unsupported(node, f"a dynamic-range table needs one scale or one per row (axis 0) and zero points 0 "
                          f"(LiteRT's EvalHybrid), got {q}")
    return q.scale.astype(np.float32)


def _bsearch(keys: list[int], wanted: int) -> int:
    """glibc's ``bsearch`` with hashtable_lookup.cc's comparator ``a - b`` (int32, wrapping): the
    index it lands on, or -1. Matches LiteRT's pick even for unsorted or repeated keys."""
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) // 2
        diff = (wanted - keys[mid] + (1 << 31)) % (1 << 32) - (1 << 31)
        if diff < 0:
            hi = mid
        elif diff > 0:
            lo = mid + 1
        else:
            return mid
    return -1


@register_kernel(Op.HASHTABLE_LOOKUP, "cpu")
def hashtable_lookup(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Row ``value[k]`` for each lookup id found among the int32 ``keys`` (binary search, as LiteRT),
    zeros otherwise; ``hits`` (uint8) says which were found."""
    arity(node, 3, 2)
    ids, keys, value, out, hits = ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0), ctx.output(1)
    if ids.dtype != np.int32 or keys.dtype != np.int32 or out.dtype != value.dtype or hits.dtype != np.uint8 \
            or value.dtype.kind not in "fiub":
        raise unsupported(node, f"expected int32 lookups and keys, a numeric value table of the output's type and "
                          f"uint8 hits, got {ids.dtype}, {keys.dtype}, {value.dtype} -> {out.dtype}, {hits.dtype}")
    if ids.ndim != 1 or keys.ndim != 1 or value.ndim < 1 or value.shape[0] != keys.shape[0] or not keys.size:
        raise ShapeError(f"{where(node)}expected 1-D lookups and keys and a table with one row per key, got "
                         f"{list(ids.shape)}, {list(keys.shape)}, {list(value.shape)}")
    check_out(node, out, (ids.shape[0], *value.shape[1:]))
    check_out(node, hits, ids.shape)

    def run() -> None:
        table = keys.tolist()
        rows = np.array([_bsearch(table, k) for k in ids.tolist()], np.int64).reshape(-1)
        found = rows >= 0
        out.fill(0)
        out[found] = value[rows[found]]
        np.copyto(hits, found, casting="unsafe")
    return run


@register_kernel(Op.EMBEDDING_LOOKUP_SPARSE, "cpu")
def embedding_lookup_sparse(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Weighted rows ``value[ids[i]] * weights[i]`` summed into the output row each sparse index
    (all but its last coordinate) names, then divided by the bucket's weight sum (MEAN) or the
    root of its squared weights (SQRTN). As LiteRT, a bucket is finished whenever the next
    lookup goes to another one, so lookups must come grouped by bucket (sorted indices);
    ``dense_shape`` must be constant (it sizes the output)."""
    arity(node, 5)
    ids, idx, weights, value = (ctx.input(i) for i in (0, 1, 3, 4))
    out = ctx.output(0)
    if ids.dtype != np.int32 or idx.dtype != np.int32 or ctx.in_info(2).dtype != np.int32 or \
            weights.dtype != np.float32 or value.dtype != np.float32 or out.dtype != np.float32:
        raise unsupported(node, f"expected int32 ids, indices and dense shape and float32 weights, table and output; "
                          f"got {ids.dtype}, {idx.dtype}, {ctx.in_info(2).dtype}, {weights.dtype}, {value.dtype} -> "
                          f"{out.dtype}")
    if ctx.const(2) is None:
        raise unsupported(node, "dense_shape is computed at run time; gpulite needs it constant (the output's shape)")
    dense = [int(d) for d in np.asarray(ctx.const(2)).reshape(-1)]
    if ids.ndim != 1 or idx.ndim != 2 or weights.shape != ids.shape or idx.shape[0] != ids.shape[0] \
            or value.ndim < 2 or len(dense) != idx.shape[1]:
        raise ShapeError(f"{where(node)}expected ids [n], indices [n, k], dense_shape [k], weights [n] and a table of "
                         f"rank >= 2, got {list(ids.shape)}, {list(idx.shape)}, {dense}, {list(weights.shape)}, "
                         f"{list(value.shape)}")
    check_out(node, out, (*dense[:-1], *value.shape[1:]))
    combiner = int(node.options.combiner)
    rows, flat = value.reshape(value.shape[0], -1), out.reshape(-1, int(np.prod(value.shape[1:])))
    strides = np.array([int(np.prod(dense[k + 1:-1])) for k in range(len(dense) - 1)], np.int64)

    def finish(bucket: int, total: np.float32, squares: np.float32) -> None:
        if combiner != 0:  # LiteRT divides even a bucket it finishes twice
            flat[bucket] /= total if combiner == 1 else np.sqrt(squares)

    def run() -> None:
        where_ = idx[:, :-1].astype(np.int64)
        if np.any((ids < 0) | (ids >= value.shape[0])) or np.any((where_ < 0) | (where_ >= np.array(dense[:-1]))):
            raise IndexError(f"{where(node)}an id or sparse index is outside the table of {value.shape[0]} rows or "
                             f"the dense shape {dense}")
        buckets = where_ @ strides
        out.fill(0)
        current, total, squares, count = 0, np.float32(0), np.float32(0), 0
        for i, b in enumerate(buckets.tolist()):
            if b != current:
                if count:
                    finish(current, total, squares)
                current, total, squares, count = b, np.float32(0), np.float32(0), 0
            w = weights[i]
            count += 1
            squares += w * w
            total += w
            flat[b] += rows[ids[i]] * w
        if count:
            finish(current, total, squares)
    return run
