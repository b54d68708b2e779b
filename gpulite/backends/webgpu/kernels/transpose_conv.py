"""TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias (float32, NHWC, OHWI weights;
every value stored through ``finish``: activation and epilogue, kernels/epilogue.py)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.geometry import pad_before
from gpulite.backends.webgpu.kernels.epilogue import finish, keep_fused
from gpulite.backends.webgpu.kernels.weights import bias_ref, packed_weights
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Graph, Node
from gpulite.graph.shape_rules.mediapipe_ops import transpose_conv_bias_geometry
from gpulite.model import schema_gen as sg
from gpulite.model.custom_options import TransposeConvBiasOptions
from gpulite.model.opdefs import Op


def fusable(g: Graph, node: Node) -> bool:
    """Whether the factories below run ``node`` (so store through ``finish``): float32 NHWC input
    and output, constant float32 OHWI weights that fit them, a constant (or no) bias."""
    t = g.tensors
    x_slot, w_slot, b_slot = (2, 1, 3) if node.op == Op.TRANSPOSE_CONV else (0, 1, 2)
    need = max(x_slot, w_slot) + 1
    if len(node.inputs) < need or len(node.outputs) != 1 or min(node.inputs[:need]) < 0:
        return False
    x, out, w = t[node.inputs[x_slot]], t[node.outputs[0]], t[node.inputs[w_slot]].const
    bias_ok = len(node.inputs) <= b_slot or node.inputs[b_slot] < 0 or t[node.inputs[b_slot]].is_const
    o = node.options
    if node.op == Op.Convolution2DTransposeBias and (
            not isinstance(o, TransposeConvBiasOptions) or w is None or w.ndim != 4 or len(x.shape) != 4
            or tuple(out.shape[1:3]) != tuple(transpose_conv_bias_geometry(x.shape[1 + d], w.shape[1 + d],
                                                                           (o.stride_h, o.stride_w)[d], o.padding)[0]
                                              for d in (0, 1))):
        return False
    return (bias_ok and w is not None and w.dtype == np.float32 and w.ndim == 4 and x.dtype == out.dtype == np.float32
            and len(x.shape) == 4 and len(out.shape) == 4 and w.shape[3] == x.shape[3] and w.shape[0] == out.shape[3])


def _program(node: Node, ctx: GpuContext, x: TensorRef, w_index: int, bias_index: int, out: TensorRef,
             strides: tuple[int, int], pads: tuple[int, int]) -> Program:
    ctx.require_f32(x, out)
    w = ctx.const(w_index)
    if w is None or w.ndim != 4 or w.dtype != np.float32:
        raise ctx.unsupported("weights must be a float32 OHWI constant")
    if len(x.shape) != 4 or len(out.shape) != 4 or w.shape[3] != x.shape[3] or w.shape[0] != out.shape[3]:
        raise ctx.unsupported(f"input {x.shape}, weights {w.shape} and output {out.shape} do not fit together")
    wt, groups = packed_weights(w)
    _, ih, iw, ic = x.shape
    n, oh, ow, oc = out.shape
    params = [
        ("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", ic),
        ("out_h", "u32", oh), ("out_w", "u32", ow), ("out_c", "u32", oc),
        ("k_h", "u32", w.shape[1]), ("k_w", "u32", w.shape[2]),
        ("stride_h", "u32", strides[0]), ("stride_w", "u32", strides[1]),
        ("pad_top", "i32", pads[0]), ("pad_left", "i32", pads[1]),
        ("groups", "u32", groups), ("out_c4", "u32", groups * 4),
        ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
        ("w_off", "u32", ctx.weight(wt).offset), ("bias_off", "u32", bias_ref(ctx, oc, groups * 4, bias_index).offset),
    ]
    extra, fin = finish(node, ctx)
    return make_program(f"{node.op.lower()} {x.shape}*{w.shape}->{out.shape}", "transpose_conv", params + extra,
                        n * oh * ow * groups, act=node.activation, weights=ctx.weights,
                        reduction_per_thread=w.shape[1] * w.shape[2] * ic, **fin)


@register_kernel(Op.TRANSPOSE_CONV, "webgpu")
@keep_fused
def transpose_conv(node: Node, ctx: GpuContext) -> Program:
    # Inputs: output_shape, weights, input, optional bias.
    x, out = ctx.input(2), ctx.output(0)
    o = node.options or sg.TransposeConvOptions()
    sh, sw = o.stride_h or 1, o.stride_w or 1
    if len(x.shape) != 4 or len(out.shape) != 4 or ctx.const(1) is None or ctx.const(1).ndim != 4:
        raise ctx.unsupported(f"input {x.shape} -> output {out.shape}")
    kh, kw = ctx.const(1).shape[1:3]
    # TFLite pads as the forward convolution from the output back to the input would.
    pads = (pad_before(o.padding, out.shape[1], x.shape[1], kh, sh, 1),
            pad_before(o.padding, out.shape[2], x.shape[2], kw, sw, 1))
    return _program(node, ctx, x, 1, 3, out, (sh, sw), pads)


@register_kernel(Op.Convolution2DTransposeBias, "webgpu")
@keep_fused
def convolution_2d_transpose_bias(node: Node, ctx: GpuContext) -> Program:
    # Inputs: input, weights, bias; options are a raw TfLiteTransposeConvParams.
    o = ctx.options(TransposeConvBiasOptions)
    x, out = ctx.input(0), ctx.output(0)
    w = ctx.const(1)
    if len(x.shape) != 4 or w is None or w.ndim != 4:
        raise ctx.unsupported(f"input {x.shape} with weights {None if w is None else w.shape}")
    (oh, pt), (ow, pl) = (transpose_conv_bias_geometry(x.shape[1], w.shape[1], o.stride_h, o.padding),
                          transpose_conv_bias_geometry(x.shape[2], w.shape[2], o.stride_w, o.padding))
    if out.shape[1:3] != (oh, ow):
        raise ctx.unsupported(f"output {out.shape} is not MediaPipe's {oh}x{ow}")
    return _program(node, ctx, x, 1, 2, out, (o.stride_h, o.stride_w), (pt, pl))
