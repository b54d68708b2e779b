"""GATHER (any params dtype, int32/int64 indices, batch_dims), GATHER_ND and EMBEDDING_LOOKUP:
index-map kernels.
Run-time indices are checked on the GPU (:mod:`.index_check`): one out of range fails the invoke
with the CPU kernel's error."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.index_check import Found, index_check
from gpulite.backends.webgpu.kernels.movement import move_program
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.graph.layout import embedding_index_error, gather_index_error, gather_nd_index_error
from gpulite.model.opdefs import Op


@register_kernel(Op.GATHER, "webgpu")
def gather(node: Node, ctx: GpuContext) -> list[Program]:
    params, idx, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ctx.require_same_quant()
    if idx.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ctx.unsupported(f"indices of dtype {idx.dtype}")
    rank = len(params.shape)
    axis = getattr(node.options, "axis", 0)
    axis = axis + rank if axis < 0 else axis
    bd = getattr(node.options, "batch_dims", 0)
    bd = bd + len(idx.shape) if bd < 0 else bd
    if not 0 <= bd <= axis < rank or params.shape[:bd] != idx.shape[:bd]:
        raise ctx.unsupported(f"axis {axis}, batch_dims {bd} for params {params.shape}, indices {idx.shape}")
    expected = params.shape[:axis] + idx.shape[bd:] + params.shape[axis + 1:]
    n = params.shape[axis]
    if out.shape != expected or n == 0:
        raise ctx.unsupported(f"gathering {idx.shape} from {params.shape} on axis {axis} is not {out.shape}")
    fixed = ctx.const(1)
    if fixed is not None and fixed.size and (fixed.min() < 0 or fixed.max() >= n):
        raise ctx.unsupported("constant index out of range")  # the CPU kernel reports it
    n_idx = int(np.prod(idx.shape[bd:], dtype=np.int64))
    p = [("inner", "u32", int(np.prod(params.shape[axis + 1:], dtype=np.int64))), ("n_idx", "u32", max(n_idx, 1)),
         ("axis_n", "u32", n), ("idx_off", "u32", idx.offset),
         ("outer", "u32", max(int(np.prod(params.shape[bd:axis], dtype=np.int64)), 1))]
    check = [] if fixed is not None else index_check(
        ctx, idx, [n], lambda found: gather_index_error(node, found.lo, found.hi, n))
    return [*check, move_program(ctx, f"gather {params.shape}[{idx.shape}] axis {axis}", "gather", params, out, p,
                                 IW=str(idx.dtype.itemsize // 4))]


@register_kernel(Op.GATHER_ND, "webgpu")
def gather_nd(node: Node, ctx: GpuContext) -> list[Program]:
    """GATHER_ND: constant indices become a table of row offsets (checked in range here), run-time
    ones are read by the kernel and checked on the GPU (:mod:`.index_check`)."""
    params, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    fixed = ctx.const(1)
    idx = ctx.input(1)
    if idx.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ctx.unsupported(f"indices of dtype {idx.dtype}")
    k = idx.shape[-1] if idx.shape else 0
    if not idx.shape or k > len(params.shape) or out.shape != idx.shape[:-1] + params.shape[k:]:
        raise ctx.unsupported(f"indices {idx.shape} into {params.shape} do not give {out.shape}")
    bound = np.array(params.shape[:k], np.int64)
    inner = int(np.prod(params.shape[k:], dtype=np.int64))
    strides = np.array([int(np.prod(params.shape[d + 1:k], dtype=np.int64)) * inner for d in range(k)], np.int64)
    name = f"gather_nd {params.shape}[{idx.shape}]"
    if fixed is not None:
        fixed = np.asarray(fixed, np.int64)
        if fixed.size and (np.any(fixed < 0) or np.any(fixed >= bound)):
            raise ctx.unsupported("constant index out of range")  # the CPU kernel reports it
        table = (fixed.reshape(-1, k) @ strides).astype(np.uint32) if k else np.zeros(1, np.uint32)
        p = [("inner", "u32", max(inner, 1)), ("table", "u32", ctx.upload(np.atleast_1d(table)).offset)]
        return [move_program(ctx, name, "gather_rows", params, out, p)]
    if k == 0 or np.any(bound == 0):
        raise ctx.unsupported(f"indices {idx.shape} into {params.shape}")  # nothing to index: the CPU kernel

    def error(found: Found) -> Exception:
        at = [int(i) for i in np.unravel_index(found.row, idx.shape[:-1])]
        return gather_nd_index_error(node, found.index, at, bound.tolist())

    p = [("inner", "u32", max(inner, 1)), ("k", "u32", k), ("idx_off", "u32", idx.offset),
         ("dims_off", "u32", ctx.upload(bound.astype(np.uint32)).offset),
         ("strides_off", "u32", ctx.upload(strides.astype(np.uint32)).offset)]
    return [*index_check(ctx, idx, bound.tolist(), error),
            move_program(ctx, name, "gather_nd", params, out, p, IW=str(idx.dtype.itemsize // 4))]


@register_kernel(Op.EMBEDDING_LOOKUP, "webgpu")
def embedding_lookup(node: Node, ctx: GpuContext) -> list[Program]:
    """EMBEDDING_LOOKUP: rows of the table by int32 ids (the gather index map on axis 0), ids
    checked on the GPU; a quantized table read into float32 (hybrid) runs on the CPU."""
    ids, table, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if ids.dtype != np.dtype(np.int32) or len(ids.shape) != 1 or len(table.shape) < 2:
        raise ctx.unsupported(f"ids {ids.shape} {ids.dtype} into a table {table.shape}")
    if out.dtype != table.dtype or out.shape != ids.shape + table.shape[1:] or table.shape[0] == 0:
        raise ctx.unsupported(f"table {table.shape} {table.dtype} -> output {out.shape} {out.dtype}")
    ctx.require_same_quant(1, 0)
    rows = table.shape[0]
    p = [("inner", "u32", int(np.prod(table.shape[1:], dtype=np.int64))), ("n_idx", "u32", max(ids.size, 1)),
         ("axis_n", "u32", rows), ("idx_off", "u32", ids.offset), ("outer", "u32", 1)]
    fixed = ctx.const(0)
    if fixed is not None:
        if fixed.size and (fixed.min() < 0 or fixed.max() >= rows):
            raise ctx.unsupported("constant id out of range")  # the CPU kernel reports it
        check = []
    else:
        check = index_check(ctx, ids, [rows], lambda found: embedding_index_error(node, found.index[0], rows))
    return [*check, move_program(ctx, f"embedding_lookup {table.shape}[{ids.shape}]", "gather", table, out, p,
                                 IW="1")]
