"""Integer CONV_2D (grouped too), DEPTHWISE_CONV_2D and TRANSPOSE_CONV on the GPU under
``quantized="exact"``: int8 / uint8 codes (int8 weights per tensor or per channel, uint8 per
tensor) and the 16x8 mode (int16 codes, int8 weights, int64 bias), bit for bit the CPU kernels
(``quantized_conv.py``, ``transpose_conv.py``): exact sums, the convs that default LiteRT runs in
XNNPACK rescaled with its float32 requantization, the other 8-bit ones as LiteRT's optimized
builtin kernels (``q_mbqm_neon``: on every channel for CONV_2D, in blocks of 8 channels for int8
DEPTHWISE_CONV_2D and TRANSPOSE_CONV, of 16 flat elements for uint8 TRANSPOSE_CONV; double
rounding for uint8 DEPTHWISE_CONV_2D and grouped CONV_2D), the 16x8 ones with the int64
``MultiplyByQuantizedMultiplier``. Filters are read in place, as the model stores them (OHWI;
depthwise [1, KH, KW, C*M]). The output side and the slicing of long dot products:
kernels/qgemm.py.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.quantized_conv import (
    conv_rescale,
    conv_scales,
    rescale_factors,
    transpose_conv_rescale,
)
from gpulite.backends.cpu.kernels.transpose_conv import transpose_padding
from gpulite.backends.kernels import register_case
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.geometry import check_window, pad_before
from gpulite.backends.webgpu.kernels.qgemm import BLOCK, MAX_PER_THREAD, exact_case, product_programs
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op


def _window(ctx: GpuContext, opts, x: TensorRef, out: TensorRef, kh: int, kw: int) -> list[tuple[str, str, int]]:
    _, ih, iw, _ = x.shape
    check_window(ctx, opts, x.shape, out.shape, kh, kw)
    _, oh, ow, _ = out.shape
    sh, sw = opts.stride_h or 1, opts.stride_w or 1
    dh, dw = opts.dilation_h_factor or 1, opts.dilation_w_factor or 1
    return [("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", x.shape[3]), ("out_h", "u32", oh),
            ("out_w", "u32", ow), ("k_w", "u32", kw), ("stride_h", "u32", sh), ("stride_w", "u32", sw),
            ("dil_h", "u32", dh), ("dil_w", "u32", dw),
            ("pad_top", "i32", pad_before(opts.padding, ih, oh, kh, sh, dh)),
            ("pad_left", "i32", pad_before(opts.padding, iw, ow, kw, sw, dw))]


def _operands(ctx: GpuContext, w_index: int, x: TensorRef, out: TensorRef) -> np.ndarray:
    w = ctx.const(w_index)
    if w is None or w.ndim != 4 or len(x.shape) != 4 or len(out.shape) != 4:
        raise ctx.unsupported("needs NHWC input and output and a constant 4-D filter")
    return w


def _rescale(node: Node, ctx: GpuContext, reals: np.ndarray, zp_w: np.ndarray) -> tuple[np.ndarray, str]:
    """The factors and rescale form of a CONV_2D / DEPTHWISE_CONV_2D as the CPU kernel's
    ``conv_requantizer`` (``quantized_conv.conv_rescale``): XNNPACK's float32 scales for the
    convs it takes, else the fixed point."""
    form = conv_rescale(node, ctx, zp_w)
    return (conv_scales(ctx), form) if form == "fp32" else (reals, form)


@register_case(Op.CONV_2D, "webgpu", exact_case(0))
def conv2d(node: Node, ctx: GpuContext) -> list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    w = _operands(ctx, 1, x, out)
    cout, kh, kw, cg = w.shape
    if cg == 0 or x.shape[3] % cg or cout != out.shape[3] or cout % (x.shape[3] // cg):
        raise ctx.unsupported(f"filter {w.shape} does not fit input {x.shape} / output {out.shape}")
    reals, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, cout, 0)
    if np.any(zp_w != zp_w[0]):
        raise ctx.unsupported("filter zero points differ by channel")
    reals, form = _rescale(node, ctx, reals, zp_w)
    params = _window(ctx, node.options or sg.Conv2DOptions(), x, out, kh, kw)
    depth = kh * kw * cg
    group_out = cout // (x.shape[3] // cg)
    # output channels (of each group) in fours: the filter as [KH*KW*Cin/G, Cout] (a word holds
    # four output channels' weights of one k), register-blocked; past one thread's share the 8-bit
    # word path (no groups, input channels in fours too) or the generic one
    blocked = None
    fours = group_out % 4 == 0
    word_path = fours and x.dtype != np.int16 and cg == x.shape[3] and cg % 4 == 0 and depth > MAX_PER_THREAD
    params += [("group_c", "u32", cg), ("group_out", "u32", group_out)]
    if fours and (depth <= MAX_PER_THREAD or word_path):
        params += [("w_off", "u32", ctx.upload(np.ascontiguousarray(w.reshape(cout, -1).T)).offset),
                   ("k_h", "u32", kh)]
        blocked = ("qconv2d16r" if x.dtype == np.int16 else "qconv2d4r", -(-out.size // cout // BLOCK) * (cout // 4),
                   {"XWORDS": str(cg % 4 == 0).lower()})
    else:
        params.append(("w_off", "u32", ctx.input(1).offset))
    return product_programs(node, ctx, f"conv_2d {x.dtype} {x.shape}*{w.shape}->{out.shape}",
                            "qconv2d4" if word_path else "qconv2d", params, x=x, w_dtype=w.dtype, depth=depth,
                            reals=reals, form=form, bias_index=2, x_zp=zp_in, w_zp=int(zp_w[0]), zp_out=zp_out,
                            lo=lo, hi=hi, word_path=word_path or blocked is not None, blocked=blocked)


@register_case(Op.DEPTHWISE_CONV_2D, "webgpu", exact_case(0))
def depthwise_conv2d(node: Node, ctx: GpuContext) -> list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    w = _operands(ctx, 1, x, out)
    _, kh, kw, cout = w.shape
    if w.shape[0] != 1 or cout != out.shape[3] or cout % x.shape[3]:
        raise ctx.unsupported(f"filter {w.shape} does not fit input {x.shape} / output {out.shape}")
    reals, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, cout, 3)
    if np.any(zp_w != zp_w[0]):
        raise ctx.unsupported("filter zero points differ by channel")
    reals, form = _rescale(node, ctx, reals, zp_w)
    params = [*_window(ctx, node.options or sg.DepthwiseConv2DOptions(), x, out, kh, kw),
              ("mult", "u32", cout // x.shape[3]), ("w_off", "u32", ctx.input(1).offset)]
    # four channels a word, register-blocked (a window past one thread's share takes the generic path)
    word_path = x.dtype != np.int16 and cout == x.shape[3] and cout % 4 == 0 and kh * kw <= MAX_PER_THREAD
    blocked = ("qdepthwise4r", -(-out.size // cout // BLOCK) * (cout // 4), {}) if word_path else None
    return product_programs(node, ctx, f"depthwise_conv_2d {x.dtype} {x.shape}*{w.shape}->{out.shape}",
                            "qdepthwise", params, x=x, w_dtype=w.dtype,
                            depth=kh * kw, reals=reals, form=form, bias_index=2, x_zp=zp_in, w_zp=int(zp_w[0]),
                            zp_out=zp_out, lo=lo, hi=hi, word_path=word_path, blocked=blocked)


@register_case(Op.TRANSPOSE_CONV, "webgpu", exact_case(2))
def transpose_conv(node: Node, ctx: GpuContext) -> list[Program]:
    """int8, uint8 and 16x8 TRANSPOSE_CONV as ``transpose_conv.py``'s ``_int8`` (filter zero points 0
    but for uint8; rescaled as default LiteRT does, ``quantized_conv.transpose_conv_rescale``)."""
    x, out = ctx.input(2), ctx.output(0)
    w = _operands(ctx, 1, x, out)
    shape_c = ctx.const(0)
    cout, kh, kw, cin = w.shape
    if cin != x.shape[3] or cout != out.shape[3] or (
            shape_c is not None and tuple(int(d) for d in np.ravel(shape_c)) != out.shape):
        raise ctx.unsupported(f"filter {w.shape} does not fit input {x.shape} / output {out.shape}")
    reals, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, cout, 0, inputs=(2, 1))
    if np.any(zp_w != zp_w[0]) or (x.dtype != np.uint8 and np.any(zp_w != 0)):
        raise ctx.unsupported("filter zero points must be 0 (one per tensor for uint8)")
    form = transpose_conv_rescale(node, ctx, zp_w)
    reals = conv_scales(ctx, 2) if form == "fp32" else reals
    o = node.options
    sh, sw = int(o.stride_h), int(o.stride_w)
    pt, pl = transpose_padding(o.padding, out.shape[1], out.shape[2], kh, kw, sh, sw)
    params = [("in_h", "u32", x.shape[1]), ("in_w", "u32", x.shape[2]), ("in_c", "u32", cin),
              ("out_h", "u32", out.shape[1]), ("out_w", "u32", out.shape[2]), ("k_w", "u32", kw),
              ("stride_h", "u32", sh), ("stride_w", "u32", sw), ("pad_top", "i32", pt),
              ("pad_left", "i32", pl), ("w_off", "u32", ctx.input(1).offset)]
    return product_programs(node, ctx, f"transpose_conv {x.dtype} {x.shape}*{w.shape}->{out.shape}", "qtconv",
                            params, x=x, w_dtype=w.dtype, depth=kh * kw * cin, reals=reals, form=form,
                            bias_index=3, x_zp=zp_in, w_zp=int(zp_w[0]), zp_out=zp_out, lo=lo, hi=hi)
