"""GATHER (any params dtype, int32/int64 indices, batch_dims): one index-map kernel."""

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
