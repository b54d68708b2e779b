"""MEAN, SUM, REDUCE_MAX and REDUCE_MIN on int8/uint8/int16 codes (``quantized="exact"``), as
the cpu's reduce.py computes them (LiteRT's kernels): an i32 sum of the codes (a tree:
integer sums do not depend on the order) requantized in the cpu's float32 steps, or the
largest / smallest code. Row reductions (:func:`~.reduce.row_programs`) into one i32 per
output, then a pack into the narrow output.

- int8 MEAN: ``round_half_even(f32(sum - N * zp_in) * (s_in / (s_out * N)))`` clamped, plus ``zp_out``;
- int16 MEAN: TFLite's integer Mean, ``MultiplyByQuantizedMultiplier`` by ``s_in / s_out`` with N
  folded into the multiplier (qmath.wgsl's ``q_mbqm``), plus ``zp_out``, clamped;
- 8-bit SUM: ``round_half_even(f32(sum - N * zp_in) * (s_in / s_out) + zp_out)`` clamped;
- int16 SUM: ``round_half_away(f32(sum) * (s_in / s_out) + bias) + zp_out`` clamped.

The sums convert to float32 exactly only below 2**24: longer 8-bit reductions (and int16 sums
that could leave i32) decline to the cpu. uint8 MEAN has no cpu kernel either.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.quant import quantize_multiplier
from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import exact_codes, load, pack_program, per_tensor, require_codes
from gpulite.backends.webgpu.kernels.qmath import qrange
from gpulite.backends.webgpu.kernels.reduce import reduction, row_programs
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_I8, _U8, _I16 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)
_EXACT_F32 = 1 << 24  # integers up to here convert to float32 exactly


def _requantize(op: Op, ctx: GpuContext, dtype: np.dtype, count: int) -> tuple[str, list]:
    """(finish, extra params) of MEAN / SUM's requantization of the i32 sum ``acc``."""
    (si, zi), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    qmin, qmax = qrange(dtype)
    zero = ("zero", "u32", 0)
    if dtype in (_I8, _U8) and count * 255 >= _EXACT_F32:
        raise ctx.unsupported(f"{count} elements per output: the sum may not convert to float32 exactly")
    if op == Op.MEAN and dtype == _I16:
        if count > 65535:
            raise ctx.unsupported(f"{count} elements per output: the int16 sum may leave i32")
        mult, shift = quantize_multiplier(float(np.float64(np.float32(si)) / np.float64(np.float32(so))))
        extra = min(count.bit_length() - 1, 32, 31 + shift)
        mult, shift = (mult << extra) // count, shift - extra
        if shift < -31:
            raise ctx.unsupported(f"rescale shift {shift} (qmath's rounding division takes up to 31)")
        return ("q_out(q_mbqm(acc - P.offset, P.m, P.shift), P.zp, P.qmin, P.qmax)",
                [("offset", "i32", count * zi), ("m", "i32", mult), ("shift", "i32", shift), ("zp", "i32", zo),
                 ("qmin", "i32", qmin), ("qmax", "i32", qmax)])
    if op == Op.MEAN:
        if dtype != _I8:
            raise ctx.unsupported(f"{dtype} MEAN (LiteRT's uint8 MEAN rounding is not reproduced on the cpu either)")
        s = np.float32(si) / (np.float32(so) * np.float32(count))
        return ("clamp(i32(round(f32(acc - P.offset) * P.s)), P.lo, P.hi) + P.zp",
                [("offset", "i32", count * zi), ("s", "f32", float(s)), ("lo", "i32", qmin - zo),
                 ("hi", "i32", qmax - zo), ("zp", "i32", zo)])
    s = np.float32(si) / np.float32(so)
    if dtype == _I16:
        if count > 65535:
            raise ctx.unsupported(f"{count} elements per output: the int16 sum may leave i32")
        bias = np.float32(np.float32(-zi) * s) * np.float32(count)
        return ("i32(clamp(round_away(mul_rounded(f32_rne(acc), P.s, P.zero) + P.bias) + f32(P.zp), "
                "f32(P.qmin), f32(P.qmax)))",
                [("s", "f32", float(s)), ("bias", "f32", float(bias)), ("zp", "i32", zo), ("qmin", "i32", qmin),
                 ("qmax", "i32", qmax), zero])
    return ("i32(clamp(round(mul_rounded(f32(acc - P.offset), P.s, P.zero) + f32(P.zp)), f32(P.qmin), "
            "f32(P.qmax)))",
            [("offset", "i32", count * zi), ("s", "f32", float(s)), ("zp", "i32", zo), ("qmin", "i32", qmin),
             ("qmax", "i32", qmax), zero])


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
        else:
            if x.dtype.itemsize == 1 and per_tensor(ctx, i=0) != per_tensor(ctx, o=0):
                raise ctx.unsupported("8-bit input and output quantization differ (LiteRT requires them equal)")
            lo, hi = qrange(x.dtype)
            init, update = (str(lo), "max(acc, v)") if op == Op.REDUCE_MAX else (str(hi), "min(acc, v)")
            finish, extra = "acc", []
        name = f"{node.op.lower()} {x.dtype} {x.shape} axes {sorted(axes)}"
        acc = ctx.scratch((out.size,))
        return [*row_programs(ctx, name, x.offset, acc.offset, kept, red, word="i32", init=init, update=update,
                              finish=finish, load=load(x.dtype, "P.x_off", "{ridx}"), extra=extra,
                              helpers=("qmath", "qfloat")),
                pack_program(name, acc.offset, out)]
    return factory


for _op in (Op.MEAN, Op.SUM, Op.REDUCE_MAX, Op.REDUCE_MIN):
    register_case(_op, "webgpu", exact_codes)(_reduce(_op))
    declare_int8("webgpu", _op)
