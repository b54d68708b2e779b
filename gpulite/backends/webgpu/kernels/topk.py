"""TOPK_V2 (float32, int32 values; int32 or int64 indices; constant ``k``): one thread per input
element finds its rank in its row (``topk.wgsl``) and writes itself there when it is among the
top ``k``: the cpu kernel's order (decreasing values, ties in increasing index order)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.graph.shape_rules.detection import scalar_count
from gpulite.model.opdefs import Op

_TYPES = {np.dtype(np.float32): ("f32", "(bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u"),
          np.dtype(np.int32): ("i32", "false")}
_INDICES = (np.dtype(np.int32), np.dtype(np.int64))


@register_kernel(Op.TOPK_V2, "webgpu")
def topk_v2(node: Node, ctx: GpuContext) -> Program:
    x, values, indices = ctx.input(0), ctx.output(0), ctx.output(1)
    ctx.require_quant_free(0)
    if x.dtype not in _TYPES or values.dtype != x.dtype or indices.dtype not in _INDICES:
        raise ctx.unsupported(f"{x.dtype} -> {values.dtype}, {indices.dtype} (float32/int32 values, "
                              "int32/int64 indices)")
    if ctx.const(1) is None:
        raise ctx.unsupported("k computed at run time")
    k = scalar_count(node, ctx.const(1), "k")
    if not x.shape or k > x.shape[-1] or values.shape != (*x.shape[:-1], k) or indices.shape != values.shape:
        raise ctx.unsupported(f"k = {k} for an input of shape {list(x.shape)}")
    n = x.shape[-1]
    typ, isnan = _TYPES[x.dtype]
    params = [("len", "u32", n), ("k", "u32", k), ("x_off", "u32", x.offset), ("v_off", "u32", values.offset),
              ("i_off", "u32", indices.offset)]
    return make_program(f"topk_v2 {x.shape} k {k}", "topk", params, x.size, word="u32", reduction_per_thread=n,
                        T=typ, ISNAN=isnan, IW=str(indices.dtype.itemsize // 4))
