"""Grouped CONV_2D (float32, NHWC): a filter of C/G input channels, as PyTorch exports ResNeXt,
RegNet and ShuffleNet v1. A case of CONV_2D (:func:`~gpulite.backends.kernels.register_case`):
conv.py's kernel runs every other CONV_2D.

One thread per pixel and four output channels of one group (``grouped_conv2d.wgsl``), summing
KH*KW*C/G products per channel as LiteRT's grouped conv does; bias and fused activation in
the kernel. Past ``MAX_PER_THREAD`` products (wide groups: RegNetY-32GF's 232 channels x 9
taps) the group's channels are cut into slices, one thread each, and a second dispatch adds
the slices' partial sums (``grouped_conv2d_sum.wgsl``). Constant weights only (through
``ctx.weight``: float16 in fp16 plans).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.geometry import check_window, pad_before
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op

MAX_PER_THREAD = 1024  # products one thread sums (issue 20's bound on work per thread)


def grouped(node: Node, ctx: GpuContext) -> bool:
    """Whether ``node`` (a float32 CONV_2D) is grouped: its filter has fewer input channels than its input."""
    if len(node.inputs) < 2 or node.inputs[1] < 0:
        return False
    x, w = ctx.in_info(0).shape, ctx.in_info(1).shape
    # integer codes (quantized="exact") are kernels/qconv.py's
    return len(x) == 4 and len(w) == 4 and 0 < w[3] < x[3] and ctx.in_info(0).dtype == np.float32


@register_case(Op.CONV_2D, "webgpu", grouped)
def grouped_conv2d(node: Node, ctx: GpuContext) -> list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    w = ctx.const(1)
    if w is None or w.dtype != np.float32:
        raise ctx.unsupported("a grouped conv needs constant float32 weights [Cout, KH, KW, C/G]")
    cout, kh, kw, cg = w.shape
    if len(out.shape) != 4 or x.shape[3] % cg or cout % (x.shape[3] // cg) or cout != out.shape[3]:
        raise ctx.unsupported(f"weights {w.shape} do not fit input {x.shape} / output {out.shape}")
    groups = x.shape[3] // cg
    og = cout // groups
    quads = -(-og // 4)
    opts = node.options or sg.Conv2DOptions()
    check_window(ctx, opts, x.shape, out.shape, kh, kw)
    packed = np.zeros((groups, kh, kw, cg, quads * 4), np.float32)  # [G, KH, KW, Cg, OG4]
    packed[..., :og] = w.reshape(groups, og, kh, kw, cg).transpose(0, 2, 3, 4, 1)
    bias = np.zeros((groups, quads * 4), np.float32)
    if ctx.has_input(2):
        b = ctx.const(2)
        if b is None:
            raise ctx.unsupported("bias computed at run time")
        bias[:, :og] = b.astype(np.float32).reshape(groups, og)
    n, ih, iw, ic = x.shape
    _, oh, ow, _ = out.shape
    sh, sw = opts.stride_h or 1, opts.stride_w or 1
    dh, dw = opts.dilation_h_factor or 1, opts.dilation_w_factor or 1
    count = n * oh * ow * groups * quads  # threads of one slice: (pixel, group, quad)
    if kh * kw > MAX_PER_THREAD:
        raise ctx.unsupported(f"a {kh}x{kw} window: more than {MAX_PER_THREAD} taps for one thread")
    slice_c = min(cg, MAX_PER_THREAD // (kh * kw))  # channels per thread
    slices = -(-cg // slice_c)
    part = ctx.scratch((slices * count * 4,)) if slices > 1 else None
    params = [
        ("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", ic),
        ("out_h", "u32", oh), ("out_w", "u32", ow), ("out_c", "u32", cout),
        ("k_h", "u32", kh), ("k_w", "u32", kw), ("stride_h", "u32", sh), ("stride_w", "u32", sw),
        ("dil_h", "u32", dh), ("dil_w", "u32", dw),
        ("pad_top", "i32", pad_before(opts.padding, ih, oh, kh, sh, dh)),
        ("pad_left", "i32", pad_before(opts.padding, iw, ow, kw, sw, dw)),
        ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
        ("group_c", "u32", cg), ("group_out", "u32", og), ("group_quads", "u32", quads),
        ("quads", "u32", groups * quads), ("slices", "u32", slices), ("slice_c", "u32", slice_c),
        ("count", "u32", count), ("part_off", "u32", part.offset if part is not None else 0),
        ("w_off", "u32", ctx.weight(packed).offset), ("bias_off", "u32", ctx.weight(bias).offset),
    ]
    name = f"conv_2d {x.shape}*{w.shape}->{out.shape} ({groups} groups)"
    main = make_program(name, "grouped_conv2d", params, count * slices, act=node.activation, weights=ctx.weights,
                        reduction_per_thread=kh * kw * slice_c)
    if slices == 1:
        return [main]
    total = make_program(f"{name} (sum of {slices} slices)", "grouped_conv2d_sum", params, count,
                         act=node.activation, weights=ctx.weights, reduction_per_thread=slices)
    return [main, total]
