"""DEQUANTIZE (int8, uint8, int16 per tensor or per channel, float16 -> float32).

QUANTIZE has no WebGPU kernel: LiteRT rounds ``x * (1 / scale)`` half to even in float32,
and writing 8-bit outputs needs whole-word packing; it runs on the CPU fallback.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

# Element e of the input as f32, from the u32 view of the arena (sign-extending shifts).
_LOADS = {
    np.dtype(np.int8): "f32(bitcast<i32>(buf[P.x_off + e / 4u] << (24u - (e % 4u) * 8u)) >> 24u)",
    np.dtype(np.uint8): "f32((buf[P.x_off + e / 4u] >> ((e % 4u) * 8u)) & 0xffu)",
    np.dtype(np.int16): "f32(bitcast<i32>(buf[P.x_off + e / 2u] << (16u - (e % 2u) * 16u)) >> 16u)",
    np.dtype(np.float16): "unpack2x16float(buf[P.x_off + e / 2u])[e % 2u]",
}


@register_kernel(Op.DEQUANTIZE, "webgpu")
def dequantize(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype not in _LOADS or out.dtype != np.float32 or x.shape != out.shape:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape}")
    q = ctx.in_info(0).quant
    inner, channels = 1, 1
    scale, zp = np.ones(1, np.float32), np.zeros(1, np.float32)
    if x.dtype != np.float16:
        if q is None or not np.size(q.scale):
            raise ctx.unsupported(f"{x.dtype} input without quantization")
        scale, zp = q.scale.astype(np.float32).reshape(-1), q.zero_point.astype(np.float32).reshape(-1)
        if scale.size > 1:
            if not (0 <= q.axis < len(x.shape) and x.shape[q.axis] == scale.size):
                raise ctx.unsupported(f"{scale.size} scales along axis {q.axis} of {x.shape}")
            inner, channels = int(np.prod(x.shape[q.axis + 1:], dtype=np.int64)), scale.size
    params = [("inner", "u32", inner), ("channels", "u32", channels), ("scale_off", "u32", ctx.upload(scale).offset),
              ("zp_off", "u32", ctx.upload(zp).offset), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"dequantize {x.dtype} {x.shape}", "dequantize", params, out.size, word="u32",
                        LOAD=_LOADS[x.dtype])
