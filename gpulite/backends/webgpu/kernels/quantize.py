"""QUANTIZE and DEQUANTIZE (int8, uint8, int16 per tensor; DEQUANTIZE also per channel and
float16 -> float32).

QUANTIZE from float32 rounds as LiteRT does (``x * (1 / scale)`` in float32, half to even)
and packs narrow codes a whole word per thread, so it is exact in both ``quantized`` modes.
Integer -> integer QUANTIZE (requantizing) computes in float here (dequantize, then quantize),
which can differ from LiteRT's integer requantization by one step: under ``quantized="exact"``
those nodes take the table of :mod:`.code_table` instead (LiteRT's codes, bit for bit).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import words_program
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_F32 = np.dtype(np.float32)
# Element e of the input as f32, from the u32 view of the arena (sign-extending shifts).
_LOADS = {
    np.dtype(np.int8): "f32(bitcast<i32>(buf[P.x_off + e / 4u] << (24u - (e % 4u) * 8u)) >> 24u)",
    np.dtype(np.uint8): "f32((buf[P.x_off + e / 4u] >> ((e % 4u) * 8u)) & 0xffu)",
    np.dtype(np.int16): "f32(bitcast<i32>(buf[P.x_off + e / 2u] << (16u - (e % 2u) * 16u)) >> 16u)",
    np.dtype(np.float16): "unpack2x16float(buf[P.x_off + e / 2u])[e % 2u]",
}
_QRANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255), np.dtype(np.int16): (-32768, 32767)}


def _per_tensor(ctx: GpuContext, q, what: str) -> tuple[float, int]:
    if q is None or np.size(q.scale) != 1:
        raise ctx.unsupported(f"{what} needs one scale (per-tensor quantization)")
    return float(np.asarray(q.scale, np.float32).reshape(-1)[0]), int(np.asarray(q.zero_point).reshape(-1)[0])


@register_kernel(Op.QUANTIZE, "webgpu", int8=True)
def quantize(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape:
        raise ctx.unsupported(f"input {x.shape} and output {out.shape} differ")
    if x.dtype == _F32:
        load = "bitcast<f32>(buf[P.x_off + e])"
        in_params: list = []
    elif x.dtype in _QRANGE:
        if ctx.quantized == "exact":  # code_table.py's case runs the ones the cpu kernel takes
            raise ctx.unsupported("integer requantization in float (quantized='float' only)")
        s, zp = _per_tensor(ctx, ctx.in_info(0).quant, f"{x.dtype} input")
        load = f"({_LOADS[x.dtype]} - f32(P.x_zp)) * P.x_scale"
        in_params = [("x_scale", "f32", s), ("x_zp", "i32", zp)]
    else:
        raise ctx.unsupported(f"input dtype {x.dtype}")
    scale, zp = _per_tensor(ctx, ctx.out_info(0).quant, f"{out.dtype} output")
    if out.dtype not in _QRANGE:
        raise ctx.unsupported(f"output dtype {out.dtype}")
    qmin, qmax = _QRANGE[out.dtype]
    params = [("x_off", "u32", x.offset), ("inv_scale", "f32", float(np.float32(1) / np.float32(scale))),
              ("zp", "i32", zp), ("qmin", "i32", qmin), ("qmax", "i32", qmax), *in_params]
    return words_program(f"quantize {x.dtype}->{out.dtype} {x.shape}", "quantize", out, params, LOAD=load)


@register_kernel(Op.DEQUANTIZE, "webgpu", int8=True)
def dequantize(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype not in _LOADS or out.dtype != _F32 or x.shape != out.shape:
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
