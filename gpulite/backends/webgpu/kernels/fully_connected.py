"""FULLY_CONNECTED (float32, default weights format, bias and fused activation) as a tiled matrix
product (kernels/gemm.py): constant weights packed once through ``ctx.weight`` (float16 in fp16
plans, math in f32), run-time weights read in place as BATCH_MATMUL's B."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels import gemm
from gpulite.backends.webgpu.kernels.batch_matmul import matrices, vec_reads
from gpulite.backends.webgpu.kernels.epilogue import finish, keep_fused
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Graph, Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op


def fusable(g: Graph, node: Node) -> bool:
    """Whether the factory below runs ``node`` through ``finish`` (so with any epilogue):
    float32 input and output, constant float32 [n, k] weights in the default format that fit,
    a constant (or no) bias."""
    t = g.tensors
    if len(node.inputs) < 2 or min(node.inputs[:2]) < 0 or len(node.outputs) != 1:
        return False
    x, w, out = t[node.inputs[0]], t[node.inputs[1]].const, t[node.outputs[0]]
    o = node.options or sg.FullyConnectedOptions()
    bias_ok = len(node.inputs) < 3 or node.inputs[2] < 0 or t[node.inputs[2]].is_const
    return (bias_ok and w is not None and w.dtype == np.float32 and w.ndim == 2 and w.shape[1] > 0
            and o.weights_format == sg.FullyConnectedOptionsWeightsFormat.DEFAULT
            and x.dtype == out.dtype == np.float32 and x.quant is None and out.quant is None
            and int(np.prod(x.shape)) % w.shape[1] == 0
            and int(np.prod(x.shape)) // w.shape[1] * w.shape[0] == int(np.prod(out.shape)))


@register_kernel(Op.FULLY_CONNECTED, "webgpu")
@keep_fused
def fully_connected(node: Node, ctx: GpuContext) -> list[Program]:
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
    name = f"fully_connected {x.shape}x{wshape}->{out.shape}"
    if ctx.const(1) is not None:  # packed once, as a weight (float16 and f16 math in fp16 plans)
        p = gemm.plan_for(ctx, rows, n_out, k, math=ctx.math)
        w = ctx.weight(gemm.packed_b(ctx.const(1).T, p))
        extra, fin = finish(node, ctx)
        params = [("x_off", "u32", x.offset), ("out_off", "u32", out.offset), ("w_off", "u32", w.offset),
                  ("bias_off", "u32", ctx.weight(gemm.padded_bias(bias, p)).offset), *extra]
        return gemm.programs(ctx, name, ("gemm_rows", "gemm_weights"), p, params, act=node.activation,
                             weights=ctx.weights, math=ctx.math,
                             A_VEC=str(k % 4 == 0 and x.offset % 4 == 0).lower(),
                             A_SCALE="return v;", **fin)
    w = ctx.input(1)  # run-time weights: B[k][n] = w[n][k], read in place
    p = gemm.plan_for(ctx, rows, n_out, k)
    ctx.require_f32(w)
    params = matrices(x, w, out, rows, k, n_out, ctx.weight(bias), adj_y=True)  # the bias: a weight
    return gemm.programs(ctx, name, ("gemm_bmm",), p, params, act=node.activation, weights=ctx.weights,
                         BIAS="wt", **vec_reads(x, w, k, n_out, adj_x=False, adj_y=True))
