"""MEAN, SUM, REDUCE_MAX, REDUCE_MIN and REDUCE_PROD on int8/uint8/int16 codes (``quantized="exact"``), as
the cpu's reduce.py computes them (LiteRT's kernels): an i32 sum of the codes (a tree:
integer sums, wrapping as the cpu's int32 ones, do not depend on the order) requantized in
the cpu's float32 steps, or the largest / smallest code. Row reductions
(:func:`~.reduce.row_programs`) whose last dispatch packs the codes.

- 8-bit MEAN and SUM (XNNPACK's reduce): ``round_half_even(f32(sum) * inv + zp')`` clamped, with
  ``inv = s_in / s_out`` (MEAN: times ``1 / N``) and ``zp' = zp_out - N * zp_in * inv``, in float32;
- int16 MEAN: TFLite's integer Mean, ``MultiplyByQuantizedMultiplier`` by ``s_in / s_out`` with N
  folded into the multiplier (qmath.wgsl's ``q_mbqm``), plus ``zp_out``, clamped;
- int16 SUM: ``round_half_away(f32(sum) * (s_in / s_out) + bias) + zp_out`` clamped.

int16 sums that could leave i32 (more than 65,535 codes) decline to the cpu. REDUCE_PROD
(int8/int16) rescales every product, so each output's codes are folded in order by one thread
(:func:`reduce_prod`, at most ``MAX_PER_THREAD``).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.quant import quantize_multiplier
from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import (
    exact_codes,
    load,
    per_tensor,
    require_codes,
    words_program,
)
from gpulite.backends.webgpu.kernels.qmath import load_fn, multiplier, qrange
from gpulite.backends.webgpu.kernels.reduce import MAX_PER_THREAD, _vec4, reduction, row_programs
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_I8, _U8, _I16 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)
_F32 = np.float32


def _requantize(op: Op, ctx: GpuContext, dtype: np.dtype, count: int) -> tuple[str, list]:
    """(finish, extra params) of MEAN / SUM's requantization of the i32 sum ``acc``."""
    (si, zi), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    qmin, qmax = qrange(dtype)
    bounds = [("qmin", "i32", qmin), ("qmax", "i32", qmax)]
    zero = ("zero", "u32", 0)
    if dtype in (_I8, _U8):  # the cpu's _eight_bit_reduce, MEAN and SUM alike
        inv = _F32(_F32(si) / _F32(so))
        if op == Op.MEAN:
            inv = _F32(inv * _F32(_F32(1.0) / _F32(count)))
        zpf = _F32(_F32(zo) - _F32(_F32(_F32(count) * _F32(zi)) * inv))
        return ("i32(clamp(round(mul_rounded(f32_rne(acc), P.s, P.zero) + P.zpf), f32(P.qmin), f32(P.qmax)))",
                [("s", "f32", float(inv)), ("zpf", "f32", float(zpf)), *bounds, zero])
    if count > 65535:
        raise ctx.unsupported(f"{count} elements per output: the int16 sum may leave i32")
    if op == Op.MEAN:
        mult, shift = quantize_multiplier(float(np.float64(_F32(si)) / np.float64(_F32(so))))
        extra = min(count.bit_length() - 1, 32, 31 + shift)
        mult, shift = (mult << extra) // count, shift - extra
        if shift < -31:
            raise ctx.unsupported(f"rescale shift {shift} (qmath's rounding division takes up to 31)")
        return ("q_out(q_mbqm(acc - P.offset, P.m, P.shift), P.zp, P.qmin, P.qmax)",
                [("offset", "i32", count * zi), ("m", "i32", mult), ("shift", "i32", shift), ("zp", "i32", zo),
                 *bounds])
    s = _F32(si) / _F32(so)
    bias = _F32(_F32(-zi) * s) * _F32(count)
    return ("i32(clamp(round_away(mul_rounded(f32_rne(acc), P.s, P.zero) + P.bias) + f32(P.zp), "
            "f32(P.qmin), f32(P.qmax)))",
            [("s", "f32", float(s)), ("bias", "f32", float(bias)), ("zp", "i32", zo), *bounds, zero])


def _reduce(op: Op):
    def factory(node: Node, ctx: GpuContext) -> list[Program]:
        x, out = ctx.input(0), ctx.output(0)
        require_codes(ctx, x, out)
        if out.dtype != x.dtype:
            raise ctx.unsupported(f"dtype {x.dtype} -> {out.dtype}")
        axes, kept, red, count = reduction(ctx, x, out)
        if op in (Op.MEAN, Op.SUM):
            init, update = "0", "acc + v"
            finish, extra = _requantize(op, ctx, x.dtype, count)
        else:  # the extreme code, scales ignored (an 8-bit output of another quantization: as XNNPACK)
            lo, hi = qrange(x.dtype)
            init, update = (str(lo), "max(acc, v)") if op == Op.REDUCE_MAX else (str(hi), "min(acc, v)")
            finish, extra = "acc", []
        name = f"{node.op.lower()} {x.dtype} {x.shape} axes {sorted(axes)}"
        return row_programs(ctx, name, x.offset, out.offset, kept, red, word="i32", init=init, update=update,
                            finish=finish, load=load(x.dtype, "P.x_off", "{ridx}"), extra=extra,
                            helpers=("qmath", "qfloat"), codes=out)
    return factory


for _op in (Op.MEAN, Op.SUM, Op.REDUCE_MAX, Op.REDUCE_MIN):
    register_case(_op, "webgpu", exact_codes)(_reduce(_op))
    declare_int8("webgpu", _op)


@register_case(Op.REDUCE_PROD, "webgpu", exact_codes)
def reduce_prod(node: Node, ctx: GpuContext) -> Program:
    """int8/int16 REDUCE_PROD, one output per call of qreduce_prod.wgsl's ``out_code``."""
    x, out = ctx.input(0), ctx.output(0)
    require_codes(ctx, x, out)
    if x.dtype not in (_I8, _I16) or out.dtype != x.dtype:
        raise ctx.unsupported(f"{x.dtype} -> {out.dtype} (LiteRT's quantized REDUCE_PROD takes int8 or int16)")
    axes, kept, red, count = reduction(ctx, x, out)
    if count > MAX_PER_THREAD:
        raise ctx.unsupported(f"{count} codes per output (one thread multiplies them in order, at most "
                              f"{MAX_PER_THREAD})")
    (si, zi), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    try:
        m, shift = multiplier(si / (so ** (1.0 / count)), "int64")  # the cpu's GetQuantProdScaling
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None
    (ks, kt), (rs, rt) = _vec4(kept), _vec4(red)
    qmin, qmax = qrange(x.dtype)
    params = [("kshape", "vec4u", ks), ("kstride", "vec4u", kt), ("rshape", "vec4u", rs), ("rstride", "vec4u", rt),
              ("count", "u32", count), ("x_off", "u32", x.offset), ("zp_in", "i32", zi), ("m", "i32", m),
              ("shift", "i32", shift), ("zp", "i32", zo), ("qmin", "i32", qmin), ("qmax", "i32", qmax)]
    return words_program(f"reduce_prod {x.dtype} {x.shape} axes {sorted(axes)}", "qreduce_prod", out, params,
                         reduction_per_thread=count, LOAD=load_fn(x.dtype))


declare_int8("webgpu", Op.REDUCE_PROD)
