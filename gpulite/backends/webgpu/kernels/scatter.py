"""SCATTER_ND of float32 or int32 updates by int32 indices: one thread per output element sums,
in index order, the update elements that land on it (LiteRT adds the rows in that order from
zeros, so duplicates round as there; int32 wraps alike). Run-time indices are checked on the GPU
(:mod:`.index_check`, each index against its dimension as LiteRT 2.3 does): one out of range
fails the invoke with the CPU kernel's error. A dispatch scans ``ROWS_PER_DISPATCH`` index rows
per thread and the next carries on from the output it left, which keeps the sum's order exact;
past ``MAX_DISPATCHES`` of them the node runs on the CPU kernel."""

from __future__ import annotations

import math

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.index_check import index_check
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.graph.layout import scatter_nd_index_error
from gpulite.model.opdefs import Op

ROWS_PER_DISPATCH = 1024  # index rows each output thread scans (the op suite's reduction bound)
MAX_DISPATCHES = 64
_TYPES = {np.dtype(np.float32): ("f32", "0.0"), np.dtype(np.int32): ("i32", "0")}


@register_kernel(Op.SCATTER_ND, "webgpu")
def scatter_nd(node: Node, ctx: GpuContext) -> list[Program]:
    idx, upd, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ctx.require_quant_free(1)
    if idx.dtype != np.dtype(np.int32) or upd.dtype not in _TYPES or out.dtype != upd.dtype:
        raise ctx.unsupported(f"indices {idx.dtype}, updates {upd.dtype} -> {out.dtype} (the WebGPU kernel takes "
                              "int32 indices and float32/int32 updates)")
    shape = out.shape
    k = idx.shape[-1] if idx.shape else 0
    rows = idx.size // k if k else 0
    if not idx.shape or k > len(shape) or upd.shape != (*idx.shape[:-1], *shape[k:]):
        raise ctx.unsupported(f"indices {idx.shape} and updates {upd.shape} do not fit the output {shape}")
    if out.size == 0 or k == 0:
        raise ctx.unsupported(f"indices {idx.shape} into an output {shape}")  # nothing to index: the CPU kernel
    chunks = -(-rows // ROWS_PER_DISPATCH)
    if chunks > MAX_DISPATCHES:
        raise ctx.unsupported(f"{rows} index rows (at most {MAX_DISPATCHES * ROWS_PER_DISPATCH}: "
                              f"{ROWS_PER_DISPATCH} a dispatch)")
    dims = list(shape[:k])
    fixed = ctx.const(0)
    if fixed is not None and fixed.size and (np.any(fixed < 0) or np.any(fixed.reshape(-1, k) >= dims)):
        raise ctx.unsupported("constant index out of range")  # the CPU kernel reports it
    slots = [math.prod(shape[j + 1:k]) for j in range(k)]  # the slot (output slice) strides
    t, zero = _TYPES[upd.dtype]
    p = [("k", "u32", k), ("slice", "u32", math.prod(shape[k:])),
         ("idx_off", "u32", idx.offset), ("dims_off", "u32", ctx.upload(np.asarray(dims, np.uint32)).offset),
         ("strides_off", "u32", ctx.upload(np.asarray(slots, np.uint32)).offset), ("upd_off", "u32", upd.offset),
         ("out_off", "u32", out.offset)]
    check = [] if fixed is not None else index_check(
        ctx, idx, dims, lambda found: scatter_nd_index_error(node, found.index, shape))
    name = f"scatter_nd {upd.shape} at {idx.shape} -> {shape}"
    per_thread = max(min(ROWS_PER_DISPATCH, rows), 1)
    return [*check, *(make_program(name, "scatter_nd", [*p, ("row0", "u32", r0),
                                                         ("row1", "u32", min(r0 + ROWS_PER_DISPATCH, rows))],
                                   out.size, word="u32", reduction_per_thread=per_thread, T=t, ZERO=zero)
                      for r0 in range(0, max(rows, 1), ROWS_PER_DISPATCH))]
