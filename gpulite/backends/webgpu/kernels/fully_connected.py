"""FULLY_CONNECTED (float32, default weights format, bias and fused activation; constant weights
and the bias through ``ctx.weight``: float16 in fp16 plans, math in f32)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op


@register_kernel(Op.FULLY_CONNECTED, "webgpu")
def fully_connected(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    o = node.options or sg.FullyConnectedOptions()
    if o.weights_format != sg.FullyConnectedOptionsWeightsFormat.DEFAULT:
        raise ctx.unsupported(f"weights format {o.weights_format}")
    wi = ctx.in_info(1)
    if wi.dtype != np.float32:
        raise ctx.unsupported(f"weights dtype {wi.dtype} (this kernel takes float32)")
    wshape = tuple(wi.shape)
    if len(wshape) != 2 or wshape[1] == 0 or x.size % wshape[1]:
        raise ctx.unsupported(f"weights {wshape} do not fit input {x.shape}")
    n_out, k = wshape
    rows = x.size // k
    if rows * n_out != out.size:
        raise ctx.unsupported(f"{x.shape} x {wshape} does not give {out.shape}")
    bias = np.zeros(n_out, np.float32)
    if ctx.has_input(2):
        b = ctx.const(2)
        if b is None:
            raise ctx.unsupported("bias computed at run time")
        bias[:] = b.astype(np.float32).reshape(-1)
    # Constant weights are weights (float16 in fp16 plans, read with wt; in fp32 wt and ld are
    # the same load, and ld keeps one pipeline for both); run-time ones are activations (ld).
    if ctx.const(1) is not None:
        w_read, w = ("ld" if ctx.weights == "f32" else "wt"), ctx.weight_input(1)
    else:
        w_read, w = "ld", ctx.input(1)
        ctx.require_f32(w)
    params = [("n_out", "u32", n_out), ("k", "u32", k), ("x_off", "u32", x.offset), ("w_off", "u32", w.offset),
              ("bias_off", "u32", ctx.weight(bias).offset), ("out_off", "u32", out.offset)]
    return make_program(f"fully_connected {x.shape}x{wshape}->{out.shape}", "fully_connected", params, out.size,
                        act=node.activation, weights=ctx.weights, W=w_read, reduction_per_thread=k)
