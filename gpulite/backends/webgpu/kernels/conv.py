"""CONV_2D and DEPTHWISE_CONV_2D (float32, NHWC; bias, fused activation, fused PReLU and epilogue
in the kernel: every output value is stored through ``finish`` (kernels/epilogue.py); a fused
zero PAD is added to the window's padding, ``node.pads``). Constant weights, biases and alphas
go through ``ctx.weight`` (float16 in fp16 plans) and are read with ``wt``/``wt4``; activations
and math stay f32. A depthwise with a merged 1x1 (``node.pointwise``) is kernels/pointwise.py."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.geometry import check_window, pad_before
from gpulite.backends.webgpu.kernels import gemm
from gpulite.backends.webgpu.kernels.epilogue import finish, keep_fused
from gpulite.backends.webgpu.kernels.pointwise import dw_pointwise
from gpulite.backends.webgpu.kernels.prelu import alpha_per_channel
from gpulite.backends.webgpu.kernels.weights import bias_ref
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Graph, Node
from gpulite.graph.shape_rules.conv import out_size
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op


def _check(node: Node, ctx: GpuContext, x: TensorRef, out: TensorRef) -> None:
    ctx.require_f32(x, out)
    if len(x.shape) != 4 or len(out.shape) != 4:
        raise ctx.unsupported(f"ranks {len(x.shape)} -> {len(out.shape)} (expected NHWC)")


def _window(ctx: GpuContext, opts, x: TensorRef, out: TensorRef, kh: int, kw: int,
            pads: tuple[int, int, int, int] | None = None) -> list[tuple[str, str, int]]:
    """Shape, stride, dilation and padding params shared by both convolutions. ``pads`` (a
    fused zero PAD: top, bottom, left, right) widen the input the padding is derived from and
    add to the leading padding; the window still reads only the real input's cells."""
    pt, pb, pl, pr = pads or (0, 0, 0, 0)
    n, ih, iw, ic = x.shape
    check_window(ctx, opts, (n, ih + pt + pb, iw + pl + pr, ic), out.shape, kh, kw)
    _, oh, ow, oc = out.shape
    sh, sw = opts.stride_h or 1, opts.stride_w or 1
    dh, dw = opts.dilation_h_factor or 1, opts.dilation_w_factor or 1
    return [
        ("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", ic),
        ("out_h", "u32", oh), ("out_w", "u32", ow), ("out_c", "u32", oc),
        ("k_h", "u32", kh), ("k_w", "u32", kw), ("stride_h", "u32", sh), ("stride_w", "u32", sw),
        ("dil_h", "u32", dh), ("dil_w", "u32", dw),
        ("pad_top", "i32", pad_before(opts.padding, ih + pt + pb, oh, kh, sh, dh) + pt),
        ("pad_left", "i32", pad_before(opts.padding, iw + pl + pr, ow, kw, sw, dw) + pl),
        ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
    ]


def fusable(g: Graph, conv: Node) -> bool:
    """Whether the factories below run ``conv`` on the GPU with whatever is fused into it
    (``finish``, ``pads``): float32 NHWC, constant float32 weights that fit, constant (or no)
    bias, the stored output size TFLite's (its input padded by ``conv.pads``)."""
    t = g.tensors
    if conv.op not in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D) or len(conv.inputs) < 2 or conv.inputs[1] < 0:
        return False
    x, mid, w = t[conv.inputs[0]], t[conv.outputs[0]], t[conv.inputs[1]].const
    bias_ok = len(conv.inputs) < 3 or conv.inputs[2] < 0 or t[conv.inputs[2]].is_const
    if (w is None or not bias_ok or w.dtype != np.float32 or w.ndim != 4 or x.dtype != np.float32
            or mid.dtype != np.float32 or len(x.shape) != 4 or len(mid.shape) != 4):
        return False
    cout, cin = mid.shape[3], x.shape[3]
    o = conv.options or (sg.Conv2DOptions() if conv.op == Op.CONV_2D else sg.DepthwiseConv2DOptions())
    pt, pb, pl, pr = conv.pads or (0, 0, 0, 0)
    sizes = [out_size(o.padding, x.shape[d] + extra, w.shape[d], s or 1, dil or 1) for d, extra, s, dil in
             ((1, pt + pb, o.stride_h, o.dilation_h_factor), (2, pl + pr, o.stride_w, o.dilation_w_factor))]
    if sizes != list(mid.shape[1:3]):  # the factory would decline (a malformed model)
        return False
    if conv.op == Op.CONV_2D:
        return w.shape[0] == cout and w.shape[3] == cin
    return w.shape[0] == 1 and w.shape[3] == cout and cin > 0 and cout % cin == 0


def input_scale_fusable(g: Graph, conv: Node) -> bool:
    """Whether the factory below runs ``conv`` multiplying its input by a per-channel factor as
    it reads it: :func:`fusable`, 1x1, stride 1, no padding, input channels a multiple of 4
    (the product's A read in vec4s, gemm_rows.wgsl)."""
    w = g.tensors[conv.inputs[1]].const if len(conv.inputs) > 1 and conv.inputs[1] >= 0 else None
    o = conv.options or sg.Conv2DOptions()
    return (conv.op == Op.CONV_2D and fusable(g, conv) and w is not None and w.shape[1:3] == (1, 1)
            and w.shape[3] % 4 == 0 and (o.stride_h or 1) == 1 and (o.stride_w or 1) == 1 and conv.pads is None)


def prelu_fusable(g: Graph, conv: Node, prelu: Node) -> bool:
    """Whether the factories below run ``conv`` with ``prelu`` fused: :func:`fusable`, and a
    single or per-channel alpha."""
    return fusable(g, conv) and alpha_per_channel(g, prelu, g.tensors[conv.outputs[0]].shape)


@register_kernel(Op.CONV_2D, "webgpu")
@keep_fused
def conv2d(node: Node, ctx: GpuContext) -> Program | list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    _check(node, ctx, x, out)
    w = ctx.const(1)
    if w is None:
        return _conv2d_runtime_weights(node, ctx, x, out)
    if w.ndim != 4 or w.dtype != np.float32:
        raise ctx.unsupported("weights must be float32 [Cout, KH, KW, Cin]")
    cout, kh, kw, cin = w.shape
    if cin != x.shape[3] or cout != out.shape[3]:
        raise ctx.unsupported(f"weights {w.shape} do not fit input {x.shape} / output {out.shape}"
                              " (grouped convolution is not supported)")
    opts = node.options or sg.Conv2DOptions()
    n, oh, ow, _ = out.shape
    window = _window(ctx, opts, x, out, kh, kw, node.pads)
    p = gemm.plan_for(ctx, n * oh * ow, cout, kh * kw * cin, math=ctx.math)
    w_off = ctx.weight(gemm.packed_b(w.transpose(1, 2, 3, 0).reshape(-1, cout), p)).offset
    extra, fin = finish(node, ctx)
    params = [("w_off", "u32", w_off), ("bias_off", "u32", bias_ref(ctx, cout, p.n4).offset), *extra]
    pads = {name: v for name, _, v in window if name.startswith("pad_")}
    if kh == kw == 1 and (opts.stride_h or 1) == (opts.stride_w or 1) == 1 and not any(pads.values()):
        a, window = "gemm_rows", [f for f in window if f[0] in ("x_off", "out_off")]  # the input is A
    else:
        a = "gemm_im2col"
    vec = cin % 4 == 0 and x.offset % 4 == 0
    scale = "return v;"
    if node.input_scale is not None:  # a fused MUL by a per-channel factor (graph.fusion's input scale)
        s = ctx.input(node.input_scale)
        if a != "gemm_rows" or not vec or s.offset % 4 or s.size != cin:
            raise ctx.unsupported(f"an input scale {s.shape} needs a 1x1 stride-1 conv reading whole vec4s")
        params.append(("s_off", "u32", s.offset))
        scale = "return v * buf4[(P.s_off + k) / 4u];"
    return gemm.programs(ctx, f"conv_2d {x.shape}*{w.shape}->{out.shape}", (a, "gemm_weights"), p,
                         window + params, act=node.activation, weights=ctx.weights, math=ctx.math,
                         A_VEC=str(vec).lower(),
                         A_SCALE=scale, **fin)


def _conv2d_runtime_weights(node: Node, ctx: GpuContext, x: TensorRef, out: TensorRef) -> list[Program]:
    """Weights (and bias) computed at run time: the tiled product over the input's windows,
    reading the OHWI weights in place as B (gemm_ohwi.wgsl)."""
    w = ctx.input(1)
    ctx.require_f32(w)
    if len(w.shape) != 4 or w.shape[3] != x.shape[3] or w.shape[0] != out.shape[3]:
        raise ctx.unsupported(f"weights {w.shape} do not fit input {x.shape} / output {out.shape}")
    bias, step = ctx.upload(np.zeros(1, np.float32)), 0
    if ctx.has_input(2):
        bias, step = ctx.input(2), 1
        ctx.require_f32(bias)
        if bias.size != out.shape[3]:
            raise ctx.unsupported(f"bias {bias.shape} for {out.shape[3]} channels")
    cout, kh, kw, cin = w.shape
    n, oh, ow, _ = out.shape
    params = [*_window(ctx, node.options or sg.Conv2DOptions(), x, out, kh, kw, node.pads),
              ("w_off", "u32", w.offset), ("bias_off", "u32", bias.offset), ("bias_step", "u32", step)]
    p = gemm.plan_for(ctx, n * oh * ow, cout, kh * kw * cin)
    return gemm.programs(ctx, f"conv_2d {x.shape}*{w.shape}->{out.shape} (run-time weights)",
                         ("gemm_im2col", "gemm_ohwi"), p, params,
                         act=node.activation, A_VEC=str(cin % 4 == 0 and x.offset % 4 == 0).lower(),
                         FINISH="return act(v);")


@register_kernel(Op.DEPTHWISE_CONV_2D, "webgpu")
@keep_fused
def depthwise_conv2d(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    _check(node, ctx, x, out)
    w = ctx.const(1)
    if w is None or w.ndim != 4 or w.shape[0] != 1 or w.dtype != np.float32:
        raise ctx.unsupported("weights must be a float32 [1, KH, KW, Cout] constant")
    _, kh, kw, cout = w.shape
    cin = x.shape[3]
    opts = node.options or sg.DepthwiseConv2DOptions()
    if node.pointwise is not None:  # the 1x1 after it merged: the window is the depthwise's own
        mid = TensorRef(out.offset, (*out.shape[:3], cout), out.dtype)
        return dw_pointwise(node, ctx, x, out, _window(ctx, opts, x, mid, kh, kw, node.pads))
    if cout != out.shape[3] or cout % cin:
        raise ctx.unsupported(f"weights {w.shape} do not fit input {x.shape} / output {out.shape}")
    name = f"depthwise_conv_2d {x.shape}*{w.shape}->{out.shape}"
    window = _window(ctx, opts, x, out, kh, kw, node.pads)
    w_off, bias_off = ctx.weight_input(1).offset, bias_ref(ctx, cout, cout).offset
    extra, fin = finish(node, ctx)
    if cout == cin and cin % 4 == 0 and x.offset % 4 == 0 and out.offset % 4 == 0:  # common: register-blocked
        n, oh, ow, _ = out.shape
        sw, dw = opts.stride_w or 1, opts.dilation_w_factor or 1
        blocks = -(-ow // 4)  # four output columns per thread
        params = [p for p in window if p[0] not in ("in_c", "out_c", "k_w", "stride_w", "dil_w")] + [
            ("c4", "u32", cin // 4), ("col_blocks", "u32", blocks), ("w_off", "u32", w_off),
            ("bias_off", "u32", bias_off), *extra]
        return make_program(name, "depthwise_conv2d_c4", params, n * oh * blocks * cin // 4, act=node.activation,
                            weights=ctx.weights, math=ctx.math, reduction_per_thread=kh * kw, KW=str(kw),
                            SW=str(sw), DW=str(dw),
                            COLS=str(3 * sw + (kw - 1) * dw + 1), **fin)
    params = [*window, ("mult", "u32", cout // cin), ("w_off", "u32", w_off), ("bias_off", "u32", bias_off), *extra]
    return make_program(name, "depthwise_conv2d", params, out.size, act=node.activation, weights=ctx.weights,
                        reduction_per_thread=kh * kw, **fin)
