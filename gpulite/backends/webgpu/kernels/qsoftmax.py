"""SOFTMAX on int8/uint8/int16 codes (``quantized="exact"``), as the cpu's softmax.py (LiteRT's
optimized kernel): a 256-entry float32 table of ``exp(-input_scale * beta * d)``, the row's
table values summed left to right in float32, ``p = value * (1 / (sum * output_scale))``,
then int8 (and the int16 output an 8-bit input may have) ``round_half_away(p) + zp`` and
uint8 ``trunc(p + 0.5)``.

The sum's float32 rounding depends on its order, so one thread sums a row (rows of at most
``MAX_REDUCTION_PER_THREAD`` codes; longer ones decline to the cpu) and a second dispatch
writes the output words (:mod:`.integer`). int16 (the 16x8 mode) is TFLite's fixed-point
``SoftmaxInt16`` with its exp and reciprocal tables, in the same two passes. int8/uint8
LOG_SOFTMAX takes the same row sum's logarithm (qlog.wgsl: 64-bit fixed point, rounded as
the CPU's float64 log), then LiteRT's float32 steps."""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np

from gpulite.backends.cpu.kernels.quantized_int16 import EXP_LUT, RECIPROCAL_LUT
from gpulite.backends.cpu.kernels.softmax import softmax_table
from gpulite.backends.cpu.quant import quantize_multiplier
from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import (
    exact_codes,
    exact_eight_bit,
    per_tensor,
    require_codes,
    words_program,
)
from gpulite.backends.webgpu.kernels.qmath import load_fn, qrange
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

MAX_ROW = 1024  # codes one thread sums (tests/webgpu/test_reduction_work.py's bound)


@register_case(Op.SOFTMAX, "webgpu", exact_codes)
def softmax(node: Node, ctx: GpuContext) -> list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    require_codes(ctx, x, out)
    if out.dtype not in (x.dtype, np.dtype(np.int16)) or x.shape != out.shape or not x.shape or x.shape[-1] == 0:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape}")
    depth = x.shape[-1]
    if depth > MAX_ROW:
        raise ctx.unsupported(f"rows of {depth} codes (one thread sums a row in order, at most {MAX_ROW})")
    if x.dtype == np.int16:
        return _int16(node, ctx, x, out)
    (si, _), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    table = softmax_table(np.float32(si), float(getattr(node.options, "beta", 0.0)))
    rows = x.size // depth
    stats = ctx.scratch((2 * rows,))
    qmin, qmax = qrange(out.dtype)
    code = load_fn(x.dtype)
    common = [("depth", "u32", depth), ("x_off", "u32", x.offset), ("table_off", "u32", ctx.upload(table).offset),
              ("stats_off", "u32", stats.offset), ("zero", "u32", 0)]
    first = make_program(f"softmax {x.dtype} {x.shape} rows", "qsoftmax_rows",
                         [*common, ("out_scale", "f32", float(np.float32(so)))], rows, word="u32", LOAD=code,
                         reduction_per_thread=depth)
    # int8 and int16 outputs: p >= 0, so round half away is trunc(p) plus 1 where the fraction
    # is >= 0.5 (exact), plus the zero point; uint8 ignores it.
    rounding = ("i32(trunc(p)) + select(0, 1, p - trunc(p) >= 0.5) + P.zp" if out.dtype != np.uint8
                else "i32(trunc(p + 0.5))")
    second = words_program(f"softmax {x.dtype} {x.shape}", "qsoftmax", out,
                           [*common, ("zp", "i32", zo), ("qmin", "i32", qmin), ("qmax", "i32", qmax)],
                           reduction_per_thread=1, LOAD=code, ROUND=rounding)
    return [first, second]


declare_int8("webgpu", Op.SOFTMAX)


def _int16(node: Node, ctx: GpuContext, x, out) -> list[Program]:
    """TFLite's SoftmaxInt16 (the cpu's :func:`~gpulite.backends.cpu.kernels.quantized_int16.softmax_int16`)."""
    (si, zi), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    if zi != 0 or zo != 0 or abs(so - 1.0 / 32768) > 1e-9:
        raise ctx.unsupported(f"int16 SOFTMAX needs zero points 0 and output scale 1/32768, got {zi}, {zo}, {so}")
    beta = float(np.float32(getattr(node.options, "beta", 0.0)))
    mult, shift = quantize_multiplier(si * beta / (10.0 / 65535.0))
    if not -31 <= shift <= 31:
        raise ctx.unsupported(f"rescale shift {shift}")
    depth = x.shape[-1]
    rows = x.size // depth
    params = [("depth", "u32", depth), ("x_off", "u32", x.offset), ("m", "i32", mult), ("shift", "i32", shift),
              ("exp_off", "u32", ctx.upload(EXP_LUT.astype(np.int32)).offset),
              ("recip_off", "u32", ctx.upload(RECIPROCAL_LUT.astype(np.int32)).offset),
              ("stats_off", "u32", ctx.scratch((3 * rows,)).offset)]
    first = make_program(f"softmax int16 {x.shape} rows", "qsoftmax16_rows", params, rows, word="u32",
                         reduction_per_thread=depth)
    return [first, words_program(f"softmax int16 {x.shape}", "qsoftmax16", out, params, reduction_per_thread=1)]


def _log_tables() -> np.ndarray:
    """qlog.wgsl's table: per k in 0..127 the 24-bit ``2^24 i_k`` (``i_k ~ 1 / (1 + (k + 1/2) / 128)``)
    and ``-ln(i_k)`` in Q60 as two words, then ln 2 in Q60 (two words), from 60-digit decimals."""
    with localcontext() as c:
        c.prec = 60
        q60 = Decimal(2) ** 60
        rows = []
        for k in range(128):
            ik = int((Decimal(2) ** 32 / (257 + 2 * k)).to_integral_value())
            lk = int(((Decimal(2) ** 24 / ik).ln() * q60).to_integral_value())
            rows += [ik, lk & 0xFFFFFFFF, lk >> 32]
        ln2 = int((Decimal(2).ln() * q60).to_integral_value())
    return np.array([*rows, ln2 & 0xFFFFFFFF, ln2 >> 32], np.uint32)


LOG_TABLES = _log_tables()


@register_case(Op.LOG_SOFTMAX, "webgpu", exact_eight_bit)
def log_softmax(node: Node, ctx: GpuContext) -> list[Program]:
    """int8/uint8 LOG_SOFTMAX as the cpu's :func:`~gpulite.backends.cpu.kernels.softmax.quantized_log_softmax`
    (LiteRT's optimized kernel): the softmax pass's max and in-order float32 sum, its logf in
    fixed point (qlog.wgsl), then the codes (qlog_softmax.wgsl)."""
    x, out = ctx.input(0), ctx.output(0)
    require_codes(ctx, x, out)
    if out.dtype != x.dtype or x.shape != out.shape or not x.shape or x.shape[-1] == 0:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape}")
    depth = x.shape[-1]
    if depth > MAX_ROW:
        raise ctx.unsupported(f"rows of {depth} codes (one thread sums a row in order, at most {MAX_ROW})")
    (si, _), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    want_zp = 127 if x.dtype == np.int8 else 255
    if np.float32(so) != np.float32(16 / 256) or zo != want_zp:
        raise ctx.unsupported(f"output scale {so}, zero point {zo} (LiteRT: 16/256 and {want_zp})")
    in_scale = np.float32(si)
    rows = x.size // depth
    qmin, qmax = qrange(out.dtype)
    tables = ctx.upload(LOG_TABLES).offset
    params = [("depth", "u32", depth), ("x_off", "u32", x.offset),
              ("table_off", "u32", ctx.upload(softmax_table(in_scale, 1.0)).offset),
              ("stats_off", "u32", ctx.scratch((2 * rows,)).offset), ("log_tab", "u32", tables),
              ("in_scale", "f32", float(in_scale)), ("ratio", "f32", float(np.float32(in_scale / np.float32(so)))),
              ("zp", "i32", zo), ("qmin", "i32", qmin), ("qmax", "i32", qmax), ("zero", "u32", 0)]
    code = load_fn(x.dtype)
    first = make_program(f"log_softmax {x.dtype} {x.shape} rows", "qlog_softmax_rows", params, rows, word="u32",
                         LOAD=code, reduction_per_thread=depth)
    return [first, words_program(f"log_softmax {x.dtype} {x.shape}", "qlog_softmax", out, params,
                                 reduction_per_thread=1, LOAD=code)]


declare_int8("webgpu", Op.LOG_SOFTMAX)
