"""Float math as elementwise maps: FLOOR, CEIL, ROUND (half to even), LOG, SIN, COS, ELU,
GELU (tanh form and exact, with the CPU kernel's erfc), SIGN (also int32), FLOOR_DIV,
FLOOR_MOD and POW (float32; int32 FLOOR_DIV / FLOOR_MOD by a constant without zeros, since a
shader cannot fail the invoke as LiteRT does on a zero divisor)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.mapping import kind, map_program
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

# op -> {input kind: WGSL expression of v0}
UNARY = {
    Op.FLOOR: {"f32": "floor(v0)"},
    Op.CEIL: {"f32": "ceil(v0)"},
    Op.ROUND: {"f32": "round(v0)"},  # WGSL rounds half to even, as TFLite's RoundToNearest
    Op.LOG: {"f32": "log(v0)"},
    Op.SIN: {"f32": "sin(v0)"},
    Op.COS: {"f32": "cos(v0)"},
    Op.ELU: {"f32": "select(exp(v0) - 1.0, v0, v0 >= 0.0)"},
    Op.SIGN: {"f32": "f32(v0 > 0.0) - f32(v0 < 0.0)", "i32": "sign(v0)"},  # NaN gives 0, as TFLite
}
_GELU = {False: f"0.5 * v0 * erfc_nr(v0 * {-math.sqrt(0.5)!r})",
         True: f"0.5 * v0 * (1.0 + tanh_safe({math.sqrt(2.0 / math.pi)!r} * (v0 + 0.044715 * v0 * v0 * v0)))"}
# op -> {operand kind: WGSL expression of v0, v1}
BINARY = {
    Op.FLOOR_DIV: {"f32": "floor(v0 / v1)", "i32": "floor_div_i(v0, v1)"},
    Op.FLOOR_MOD: {"f32": "floor_mod_f(v0, v1)", "i32": "floor_mod_i(v0, v1)"},
    Op.POW: {"f32": "pow_c(v0, v1)"},
}


def _unary(exprs_of: Callable[[Node], dict[str, str]]):
    def factory(node: Node, ctx: GpuContext) -> Program:
        x, out = ctx.input(0), ctx.output(0)
        ctx.require_quant_free(0)
        k, exprs = kind(x.dtype), exprs_of(node)
        if k not in exprs or out.dtype != x.dtype or out.shape != x.shape:
            raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape} (takes {sorted(exprs)})")
        return map_program(ctx, f"{node.op.lower()} {x.shape}", [(x, k)], out, k, exprs[k])  # type: ignore[index]
    return factory


for _op, _exprs in UNARY.items():
    register_kernel(_op, "webgpu", _unary(lambda node, e=_exprs: e))
register_kernel(Op.GELU, "webgpu", _unary(lambda node: {"f32": _GELU[bool(getattr(node.options, "approximate", 0))]}))


def _binary(exprs: dict[str, str]):
    def factory(node: Node, ctx: GpuContext) -> Program:
        a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
        ctx.require_quant_free(0, 1)
        k = kind(a.dtype)
        if k not in exprs or not (a.dtype == b.dtype == out.dtype):
            raise ctx.unsupported(f"{a.dtype}, {b.dtype} -> {out.dtype} (takes {sorted(exprs)})")
        if k == "i32":
            divisor = ctx.const(1)
            if divisor is None or not np.all(divisor):
                raise ctx.unsupported("int32 divisor that is not a constant without zeros (LiteRT fails the "
                                      "invoke on a zero divisor; a shader cannot)")
        return map_program(ctx, f"{node.op.lower()} {a.shape}x{b.shape}", [(a, k), (b, k)], out, k,  # type: ignore[arg-type]
                           exprs[k])  # type: ignore[index]
    return factory


for _op, _exprs in BINARY.items():
    register_kernel(_op, "webgpu", _binary(_exprs))
