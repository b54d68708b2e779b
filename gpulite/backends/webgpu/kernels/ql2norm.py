"""L2_NORMALIZATION on int8/uint8 codes (``quantized="exact"``), as the cpu's
quantized_l2norm.py (LiteRT's integer kernel): a row reduction (:func:`~.reduce.row_programs`)
sums each row's squared ``x - zp`` in i32, then one thread per output word takes the inverse
square root of its row's sum in gemmlowp's fixed point and rescales the codes (ql2norm.wgsl)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import exact_eight_bit, per_tensor, require_codes, words_program
from gpulite.backends.webgpu.kernels.qmath import load_fn, qrange
from gpulite.backends.webgpu.kernels.reduce import row_programs, split_dims
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_OUT = {np.dtype(np.int8): "clamp(q_mbqm(d, m, shift + 7), -128, 127)",
        np.dtype(np.uint8): "clamp(q_mbqm(128 * d, m, shift) + 128, 0, 255)"}


@register_case(Op.L2_NORMALIZATION, "webgpu", exact_eight_bit)
def l2_normalization(node: Node, ctx: GpuContext) -> list[Program]:
    x, out = ctx.input(0), ctx.output(0)
    require_codes(ctx, x, out)
    if x.dtype != out.dtype or x.shape != out.shape or not x.shape or x.shape[-1] == 0 or node.activation:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape}, activation {node.activation}")
    (_, zp), (so, zo) = per_tensor(ctx, i=0), per_tensor(ctx, o=0)
    if so != 1 / 128 or zo != (0 if x.dtype == np.int8 else 128):
        raise ctx.unsupported(f"output scale {so}, zero point {zo} (LiteRT's l2norm.cc: 1/128 and 0 or 128)")
    depth = x.shape[-1]
    lo, hi = qrange(x.dtype)
    if depth * max(zp - lo, hi - zp) ** 2 >= 1 << 31:
        raise ctx.unsupported(f"rows of {depth} codes (the sum of squares may leave i32)")
    kept, red = split_dims(x.shape, {len(x.shape) - 1})
    sums = ctx.scratch((x.size // depth,))
    code = f"({load_fn(x.dtype)}(P.x_off, {{ridx}}) - P.zp)"
    name = f"l2_normalization {x.dtype} {x.shape}"
    return [*row_programs(ctx, f"{name} sums of squares", x.offset, sums.offset, kept, red, word="i32", init="0",
                          update="acc + v", finish="acc", load=f"{code} * {code}", extra=[("zp", "i32", zp)],
                          helpers=("qmath",)),
            words_program(name, "ql2norm", out, [("depth", "u32", depth), ("x_off", "u32", x.offset), ("zp", "i32", zp),
                                                 ("sums_off", "u32", sums.offset)],
                          reduction_per_thread=1, LOAD=load_fn(x.dtype), OUT=_OUT[x.dtype])]

declare_int8("webgpu", Op.L2_NORMALIZATION)
