"""A thin DEPTHWISE_CONV_2D and the 1x1 CONV_2D after it, in one kernel (``node.pointwise``).

The TFLite GPU delegate's depthwise + 1x1 merge (``depthwise_conv_plus_1x1_conv.cc``): one
thread per output pixel keeps the pixel's depthwise result in registers and computes every
output channel of the 1x1 from it, so the intermediate tensor is never written or read, and
one dispatch does the work of two. It pays where the layer is thin (few channels, so a
thread's registers hold the whole pixel and the intermediate is mostly memory traffic):
:func:`fusable` takes the delegate's limits for float32 on GPUs other than Apple and Mali.
The depthwise sums its taps in the order of ``depthwise_conv2d_c4.wgsl``, the 1x1 its
channels in order, 4 at a time.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.epilogue import Params, finish
from gpulite.backends.webgpu.kernels.weights import bias_ref
from gpulite.backends.webgpu.program import KernelError, Program, make_program, wgsl_clamp
from gpulite.graph.ir import Graph, Node
from gpulite.model import schema_gen as sg

MAX_CHANNELS = 16  # depthwise channels (the delegate: <= 16, and channels * taps <= 3 * 3 * 16)
MAX_OUT = 32  # 1x1 output channels (<= 32, and channels * outputs <= 16 * 32)


def fusable(g: Graph, dw: Node, conv: Node) -> bool:
    """Whether :func:`dw_pointwise` runs ``dw`` with the 1x1 ``conv`` merged, given that the
    depthwise kernel runs ``dw`` (:func:`.conv.fusable`, asked by the rules): multiplier 1,
    channels a multiple of 4 within the delegate's limits, and a 1x1 stride-1 conv with
    constant float32 weights and bias."""
    t = g.tensors
    w, cw = t[dw.inputs[1]].const, t[conv.inputs[1]].const
    c = t[dw.outputs[0]].shape[-1]
    if cw is None or cw.dtype != np.float32 or cw.ndim != 4 or w.shape[-1] != t[dw.inputs[0]].shape[-1]:
        return False
    cout = cw.shape[0]
    o = conv.options or sg.Conv2DOptions()
    bias = conv.inputs[2] if len(conv.inputs) > 2 else -1
    return (cw.shape[1:] == (1, 1, c) and c % 4 == 0 and c <= MAX_CHANNELS and c * w.shape[1] * w.shape[2] <= 9 * 16
            and cout <= MAX_OUT and c * cout <= 16 * 32 and (o.stride_h or 1) == 1 and (o.stride_w or 1) == 1
            and (bias < 0 or (t[bias].is_const and t[bias].const.size == cout)))


def _packed_1x1(w: np.ndarray) -> np.ndarray:
    """[Cout, 1, 1, C] weights as [G, C/4, 4 (input), 4 (output)], output channels zero-padded
    to G groups of 4: a thread's group reads one 4x4 block per 4 input channels, in order."""
    cout, c = w.shape[0], w.shape[3]
    groups = -(-cout // 4)
    wp = np.zeros((groups * 4, c), np.float32)
    wp[:cout] = w.reshape(cout, c)
    return np.ascontiguousarray(wp.reshape(groups, 4, c // 4, 4).transpose(0, 2, 3, 1))


def dw_pointwise(node: Node, ctx: GpuContext, x: TensorRef, out: TensorRef, window: Params) -> Program:
    """The merged kernel; ``window`` holds the depthwise's window params (conv.py's, for the
    depthwise's own output shape)."""
    pw = node.pointwise
    w, cw = ctx.const(1), ctx.const(pw.weights)
    if w is None or cw is None or x.offset % 4 or x.shape[3] % 4 or w.shape[3] != x.shape[3]:
        raise KernelError(f"depthwise node {node.index}: the merged 1x1 needs constant weights and a vec4 input")
    n, oh, ow, cout = out.shape
    c, groups = x.shape[3], -(-cout // 4)
    pw_bias = np.zeros(groups * 4, np.float32)
    if pw.bias >= 0:
        pw_bias[:cout] = ctx.const(pw.bias).reshape(-1)
    params = [p for p in window if p[0] != "out_c"] + [
        ("out_c", "u32", cout), ("groups", "u32", groups),
        ("dw_w_off", "u32", ctx.weight_input(1).offset), ("dw_b_off", "u32", bias_ref(ctx, c, c).offset),
        ("pw_w_off", "u32", ctx.weight(_packed_1x1(cw)).offset), ("pw_b_off", "u32", ctx.weight(pw_bias).offset)]
    extra, fin = finish(node, ctx)
    return make_program(f"depthwise_conv_2d+1x1 {x.shape}*{w.shape}*{cw.shape}->{out.shape}", "dw_pointwise",
                        params + extra, n * oh * ow, act=pw.activation, weights=ctx.weights,
                        reduction_per_thread=c * w.shape[1] * w.shape[2],  # taps of every channel into each output
                        C4=str(c // 4), DW_ACT=f"return {wgsl_clamp('v', node.activation)};", **fin)
