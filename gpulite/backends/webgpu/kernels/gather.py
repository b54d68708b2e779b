"""GATHER (any params dtype, int32/int64 indices, batch_dims) and GATHER_ND (constant indices):
index-map kernels."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.movement import move_program
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_kernel(Op.GATHER, "webgpu")
def gather(node: Node, ctx: GpuContext) -> Program:
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
    return move_program(ctx, f"gather {params.shape}[{idx.shape}] axis {axis}", "gather", params, out, p,
                        IW=str(idx.dtype.itemsize // 4))


@register_kernel(Op.GATHER_ND, "webgpu")
def gather_nd(node: Node, ctx: GpuContext) -> Program:
    """GATHER_ND with constant indices (checked in range here); run-time indices decline, since
    LiteRT fails the invoke on an index out of range and a shader cannot."""
    params, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    idx = ctx.const(1)
    if idx is None:
        raise ctx.unsupported("indices computed at run time (an index out of range must fail the invoke)")
    idx = np.asarray(idx, np.int64)
    k = idx.shape[-1] if idx.ndim else 0
    if idx.ndim == 0 or k > len(params.shape) or out.shape != idx.shape[:-1] + params.shape[k:]:
        raise ctx.unsupported(f"indices {idx.shape} into {params.shape} do not give {out.shape}")
    bound = np.array(params.shape[:k], np.int64)
    if idx.size and (np.any(idx < 0) or np.any(idx >= bound)):
        raise ctx.unsupported("constant index out of range")  # the CPU kernel reports it
    inner = int(np.prod(params.shape[k:], dtype=np.int64))
    strides = np.array([int(np.prod(params.shape[d + 1:k], dtype=np.int64)) * inner for d in range(k)], np.int64)
    table = (idx.reshape(-1, k) @ strides).astype(np.uint32) if k else np.zeros(1, np.uint32)
    p = [("inner", "u32", max(inner, 1)), ("table", "u32", ctx.upload(np.atleast_1d(table)).offset)]
    return move_program(ctx, f"gather_nd {params.shape}[{idx.shape}]", "gather_rows", params, out, p)
