"""Elementwise unary ops (float32): RELU family, LOGISTIC, HARD_SWISH, TANH, EXP, ...; ABS and
NEG also on int32 (through :mod:`.mapping`).

A float RSQRT or SQRT standing for an int8 / int16 one under ``quantized="float"``
(``Node.quantized_input``: :mod:`..quantized`) also checks the code each input value stands for
(``unary_domain.wgsl``): codes below the zero point (negative values, on which LiteRT fails the
invoke) are counted, and the least one kept, in a sticky check's two words
(``GpuArena.add_check``, by ``atomicAdd`` / ``atomicMax``, as ``code_table.py``'s kernel does),
read with the outputs: ``invoke`` then raises the cpu kernel's error. Its values take ``max(x,
0)``: a value just below 0 that still rounds to the zero point is 0 for LiteRT too.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.math_ops import input_domain
from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.code_table import domain_check
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
        if node.quantized_input is not None:
            return _checked(node, ctx, params, expr)
        return make_program(f"{node.op.lower()} {x.shape}", "unary", params, out.size, OP=expr)
    return factory


def _checked(node: Node, ctx: GpuContext, params: list, expr: str) -> Program:
    """The unary program checking the codes its input stands for (module docstring)."""
    info, size = node.quantized_input, ctx.input(0).size
    domain = input_domain(node, info)
    assert domain is not None, "float_graph marks only nodes whose input can hold codes below the zero point"
    least = domain[0]
    params = [*params, ("inv_scale", "f32", float(np.float32(1) / np.float32(info.quant.scale[0]))),
              ("depth", "u32", least - int(np.iinfo(info.dtype).min)),
              ("check_off", "u32", domain_check(ctx, *domain, size))]
    return make_program(f"{node.op.lower()} {ctx.input(0).shape} of {info.dtype} codes", "unary_domain", params,
                        size, word="u32", atomics=True, OP=expr)


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
