"""FULLY_CONNECTED (float32, default weights format, bias and fused activation)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg


@register_kernel("FULLY_CONNECTED", "webgpu")
def fully_connected(node: Node, ctx: GpuContext) -> Program:
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ctx.require_f32(x, w, out)
    o = node.options or sg.FullyConnectedOptions()
    if o.weights_format != sg.FullyConnectedOptionsWeightsFormat.DEFAULT:
        raise ctx.unsupported(f"weights format {o.weights_format}")
    if len(w.shape) != 2 or w.shape[1] == 0 or x.size % w.shape[1]:
        raise ctx.unsupported(f"weights {w.shape} do not fit input {x.shape}")
    n_out, k = w.shape
    rows = x.size // k
    if rows * n_out != out.size:
        raise ctx.unsupported(f"{x.shape} x {w.shape} does not give {out.shape}")
    bias = np.zeros(n_out, np.float32)
    if ctx.has_input(2):
        b = ctx.const(2)
        if b is None:
            raise ctx.unsupported("bias computed at run time")
        bias[:] = b.astype(np.float32).reshape(-1)
    params = [("n_out", "u32", n_out), ("k", "u32", k), ("x_off", "u32", x.offset), ("w_off", "u32", w.offset),
              ("bias_off", "u32", ctx.upload(bias).offset), ("out_off", "u32", out.offset)]
    return make_program(f"fully_connected {x.shape}x{w.shape}->{out.shape}", "fully_connected", params, out.size,
                        act=node.activation)
