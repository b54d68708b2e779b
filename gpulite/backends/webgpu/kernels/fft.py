"""RFFT2D (float32 -> complex64, a direct DFT per output element) and COMPLEX_ABS (complex64 ->
float32): the STFT front-ends of audio models. complex64 is two float32 words (re, im), as in
the host arena."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_C64 = np.dtype(np.complex64)


@register_kernel(Op.RFFT2D, "webgpu")
def rfft2d(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    length = ctx.const(1)
    if x.dtype != np.float32 or out.dtype != _C64 or len(x.shape) < 2 or length is None or np.size(length) != 2:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} (float32 -> complex64, constant fft_length)")
    fh, fw = (int(v) for v in np.asarray(length).reshape(-1))
    if fh & (fh - 1) or fw & (fw - 1) or fh < 1 or fw < 2:  # LiteRT's Prepare: powers of two
        raise ctx.unsupported(f"fft_length {[fh, fw]}: LiteRT takes powers of two")
    if out.shape != (*x.shape[:-2], fh, fw // 2 + 1):
        raise ctx.unsupported(f"fft_length {[fh, fw]} of {x.shape} does not give {out.shape}")
    params = [("fh", "u32", fh), ("fw", "u32", fw), ("in_h", "u32", x.shape[-2]), ("in_w", "u32", x.shape[-1]),
              ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"rfft2d {x.shape} fft {[fh, fw]}", "rfft2d", params, out.size)


@register_kernel(Op.COMPLEX_ABS, "webgpu")
def complex_abs(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype != _C64 or out.dtype != np.float32 or x.shape != out.shape:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape} (complex64 -> float32)")
    params = [("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    # |z| without overflow or underflow in the squares (as std::abs's hypot): scale by max(|re|, |im|).
    expr = ("select(0.0, max(abs(re), abs(im)) * length(vec2<f32>(re, im) / max(abs(re), abs(im))), "
            "max(abs(re), abs(im)) > 0.0)")
    return make_program(f"complex_abs {x.shape}", "complex_abs", params, out.size, OP=expr)
