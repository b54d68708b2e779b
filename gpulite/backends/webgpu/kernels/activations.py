"""Elementwise unary ops (float32): RELU family, LOGISTIC, HARD_SWISH, TANH, EXP, ...; ABS and
NEG also on int32 (through :mod:`.mapping`)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.mapping import map_program
from gpulite.backends.webgpu.program import Program, make_program, wgsl_clamp
from gpulite.graph.ir import Node
from gpulite.model.opdefs import FusedActivation, Op

# WGSL expressions of x.
UNARY = {
    # RELU, RELU6 and RELU_N1_TO_1 compute the fused activation of their name.
    **{op: wgsl_clamp("x", FusedActivation(op)) for op in (Op.RELU, Op.RELU6, Op.RELU_N1_TO_1)},
    Op.RELU_0_TO_1: "clamp(x, 0.0, 1.0)",
    # exp(-x) overflows to inf for x < -88, and 1 / (1 + inf) is the right limit, 0.
    Op.LOGISTIC: "1.0 / (1.0 + exp(-x))",
    Op.HARD_SWISH: "x * clamp(x + 3.0, 0.0, 6.0) * (1.0 / 6.0)",
    Op.TANH: "sign(x) * (1.0 - exp(-2.0 * abs(x))) / (1.0 + exp(-2.0 * abs(x)))",
    Op.EXP: "exp(x)",
    Op.NEG: "-x",
    Op.ABS: "abs(x)",
    Op.SQRT: "sqrt(x)",
    Op.RSQRT: "inverseSqrt(x)",
    Op.SQUARE: "x * x",
}
# int32 forms (wrapping, as TFLite's kernels in practice).
INT_UNARY = {Op.ABS: "abs(v0)", Op.NEG: "-v0"}


def _unary(expr: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        x, out = ctx.input(0), ctx.output(0)
        if node.op in INT_UNARY and x.dtype == out.dtype == np.int32 and x.shape == out.shape:
            return map_program(ctx, f"{node.op.lower()} {x.shape} int32", [(x, "i32")], out, "i32", INT_UNARY[node.op])
        ctx.require_f32(x, out)
        if x.size != out.size:
            raise ctx.unsupported(f"input {x.shape} and output {out.shape} differ in size")
        params = [("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        return make_program(f"{node.op.lower()} {x.shape}", "unary", params, out.size, OP=expr)
    return factory


for _op, _expr in UNARY.items():
    register_kernel(_op, "webgpu", _unary(_expr))


@register_kernel(Op.LEAKY_RELU, "webgpu")
def leaky_relu(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape:
        raise ctx.unsupported(f"input {x.shape} and output {out.shape} differ")
    params = [("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
              ("alpha", "f32", float(getattr(node.options, "alpha", 0.2)))]
    return make_program(f"leaky_relu {x.shape}", "unary", params, out.size, OP="select(x * P.alpha, x, x > 0.0)")
