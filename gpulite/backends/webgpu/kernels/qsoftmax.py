"""SOFTMAX on int8/uint8 codes (``quantized="exact"``), as the cpu's softmax.py (LiteRT's
optimized kernel): a 256-entry float32 table of ``exp(-input_scale * beta * d)``, the row's
table values summed left to right in float32, ``p = value * (1 / (sum * output_scale))``,
then int8 ``round_half_away(p) + zp`` and uint8 ``trunc(p + 0.5)``.

The sum's float32 rounding depends on its order, so one thread sums a row (rows of at most
``MAX_REDUCTION_PER_THREAD`` codes; longer ones decline to the cpu) and a second dispatch
writes the output words (:mod:`.integer`)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import exact_codes, per_tensor, require_codes, words_program
from gpulite.backends.webgpu.kernels.qmath import load_fn, qrange
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

MAX_ROW = 1024  # codes one thread sums (tests/webgpu/test_reduction_work.py's bound)


def _eight_bit(node: Node, ctx: GpuContext) -> bool:
    return exact_codes(node, ctx) and ctx.in_info(0).dtype.itemsize == 1


@register_case(Op.SOFTMAX, "webgpu", _eight_bit)
def softmax(node: Node, ctx: GpuContext) -> list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    require_codes(ctx, x, out)
    if x.dtype != out.dtype or x.shape != out.shape or not x.shape or x.shape[-1] == 0:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape}")
    depth = x.shape[-1]
    if depth > MAX_ROW:
        raise ctx.unsupported(f"rows of {depth} codes (one thread sums a row in order, at most {MAX_ROW})")
    (si, _), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    beta = float(getattr(node.options, "beta", 0.0))
    coef = np.float32(-np.float32(si) * np.float32(beta))
    table = np.empty(256, np.float32)  # table[255 - d] = expf(-input_scale * beta * d), as the cpu
    table[255 - np.arange(256)] = np.exp((coef * np.arange(256, dtype=np.float32)).astype(np.float64))
    rows = x.size // depth
    stats = ctx.scratch((2 * rows,))
    qmin, qmax = qrange(out.dtype)
    code = load_fn(x.dtype)
    common = [("depth", "u32", depth), ("x_off", "u32", x.offset), ("table_off", "u32", ctx.upload(table).offset),
              ("stats_off", "u32", stats.offset), ("zero", "u32", 0)]
    first = make_program(f"softmax {x.dtype} {x.shape} rows", "qsoftmax_rows",
                         [*common, ("out_scale", "f32", float(np.float32(so)))], rows, word="u32", LOAD=code,
                         reduction_per_thread=depth)
    # int8: p >= 0, so round half away is trunc(p) plus 1 where the fraction is >= 0.5 (exact).
    rounding = ("i32(trunc(p)) + select(0, 1, p - trunc(p) >= 0.5) + P.zp" if out.dtype == np.int8
                else "i32(trunc(p + 0.5))")
    second = words_program(f"softmax {x.dtype} {x.shape}", "qsoftmax", out,
                           [*common, ("zp", "i32", zo), ("qmin", "i32", qmin), ("qmax", "i32", qmax)],
                           reduction_per_thread=1, LOAD=code, ROUND=rounding)
    return [first, second]


declare_int8("webgpu", Op.SOFTMAX)
