"""Integer FULLY_CONNECTED and BATCH_MATMUL on the GPU under ``quantized="exact"``, bit for bit
the CPU kernels (``fully_connected.py``'s ``_quantized``, ``batch_matmul.py``'s ``_quantized``);
the output side and the slicing of long dot products: kernels/qgemm.py.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.batch_matmul import batch_matmul_scale, quantized_rescale, xnnpack_fp32
from gpulite.backends.cpu.kernels.fully_connected import fc_rescale
from gpulite.backends.cpu.kernels.quantized_conv import conv_scales, rescale_factors
from gpulite.backends.kernels import register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.batch_matmul import dimensions
from gpulite.backends.webgpu.kernels.qgemm import exact_case, product_programs
from gpulite.backends.webgpu.kernels.qmath import qrange
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_case(Op.FULLY_CONNECTED, "webgpu", exact_case(0))
def fully_connected(node: Node, ctx: GpuContext) -> list[Program]:
    """FULLY_CONNECTED as ``fully_connected.py``'s ``_quantized``: 8-bit codes rescaled as default
    LiteRT does (``fc_rescale``: XNNPACK's float32 requantization or ruy's rounding), int16 ones
    with single rounding; per-tensor weights take the float32 product of the scales."""
    x, out = ctx.input(0), ctx.output(0)
    w = ctx.const(1)
    if w is None or w.ndim != 2 or getattr(node.options, "weights_format", 0) != 0:
        raise ctx.unsupported("needs constant 2-D weights in the default format")
    if node.activation and node.activation.clamp is None:
        raise ctx.unsupported(f"fused {node.activation}")  # the CPU kernel refuses it, as LiteRT
    units, depth = w.shape
    if depth == 0 or x.size % depth or out.size != x.size // depth * units or out.shape[-1] != units:
        raise ctx.unsupported(f"input {x.shape} by weights {w.shape} does not give {out.shape}")
    q = ctx.in_info(1).quant
    per_channel = w.dtype == np.int8 and q is not None and q.scale.size > 1
    reals, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, units, 0, float_product=not per_channel)
    if np.any(zp_w != zp_w[0]):
        raise ctx.unsupported("filter zero points differ by channel")
    form = "single64" if x.dtype == np.int16 else fc_rescale(node, ctx)
    reals = conv_scales(ctx) if form == "fp32" else reals
    word_path = x.dtype != np.int16 and depth % 4 == 0 and units % 4 == 0
    if word_path:  # the weights as [depth, units]: a word holds four units' weights of one feature
        params = [("w_off", "u32", ctx.upload(np.ascontiguousarray(w.T)).offset)]
    else:
        params = [("rows", "u32", x.size // depth), ("batch", "vec4u", [1, 1, 1, 1]),
                  ("sa", "vec4u", [0, 0, 0, 0]), ("sb", "vec4u", [0, 0, 0, 0]), ("a_m", "u32", depth),
                  ("a_k", "u32", 1), ("b_k", "u32", 1), ("b_n", "u32", depth), ("w_off", "u32", ctx.input(1).offset)]
    return product_programs(node, ctx, f"fully_connected {x.dtype} {x.shape}x{w.shape}",
                            "qmatmul4" if word_path else "qmatmul", params, x=x, w_dtype=w.dtype, depth=depth,
                            reals=reals, bias_index=2, x_zp=zp_in, w_zp=int(zp_w[0]), word_path=word_path,
                            form=form, zp_out=zp_out, lo=lo, hi=hi)


@register_case(Op.BATCH_MATMUL, "webgpu", exact_case(0))
def batch_matmul(node: Node, ctx: GpuContext) -> list[Program]:
    """int8 / int16 BATCH_MATMUL as ``batch_matmul.py``'s ``_quantized`` (adj_x / adj_y, batch
    dims broadcast): XNNPACK's float32 requantization with RHS zero point 0 (default LiteRT runs
    those in XNNPACK), else double rounding; int16 the int64 form."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if not (a.dtype == b.dtype == out.dtype and a.dtype in (np.int8, np.int16)) or len(a.shape) < 2 \
            or len(b.shape) < 2:
        raise ctx.unsupported(f"{a.dtype} {a.shape} x {b.dtype} {b.shape} -> {out.dtype} (int8 or int16, rank >= 2)")
    adj_x, adj_y, m, k, n, _, dims, sa, sb = dimensions(node, ctx, a, b, out)
    real, zl, zr, zo = quantized_rescale(node, ctx)
    pad = 4 - len(dims)
    params = [("rows", "u32", m), ("batch", "vec4u", [1] * pad + dims),
              ("sa", "vec4u", [0] * pad + [s * m * k for s in sa]),
              ("sb", "vec4u", [0] * pad + [s * k * n for s in sb]),
              ("a_m", "u32", 1 if adj_x else k), ("a_k", "u32", m if adj_x else 1),
              ("b_k", "u32", 1 if adj_y else n), ("b_n", "u32", k if adj_y else 1), ("w_off", "u32", b.offset)]
    form = "int64" if a.dtype == np.int16 else "fp32" if xnnpack_fp32(ctx, zr) else "double"
    reals = batch_matmul_scale(ctx) if form == "fp32" else np.array([real])
    return product_programs(node, ctx, f"batch_matmul {a.dtype} {a.shape}x{b.shape}", "qmatmul", params, x=a,
                            w_dtype=b.dtype, depth=k, reals=reals, form=form, bias_index=-1, x_zp=zl,
                            w_zp=zr, zp_out=zo, lo=qrange(out.dtype)[0], hi=qrange(out.dtype)[1])
