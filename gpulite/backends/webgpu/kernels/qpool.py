"""MAX_POOL_2D and AVERAGE_POOL_2D on int8/uint8/int16 codes (``quantized="exact"``), as
LiteRT's integer kernels (the cpu's pool.py): the max of the codes; the average an i32 sum of
the window's codes inside the input divided by their count, rounding half away from zero;
both clamped to the fused activation's range. One output word per thread, or for a window over
the whole image a row reduction (:func:`~.reduce.row_programs`) packing its codes."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import (
    bounds,
    exact_codes,
    load,
    per_tensor,
    require_codes,
    words_program,
)
from gpulite.backends.webgpu.kernels.pool import window
from gpulite.backends.webgpu.kernels.qmath import qrange
from gpulite.backends.webgpu.kernels.reduce import MAX_PER_THREAD, row_programs, split_dims
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

# LiteRT's rounding division of a window sum by its count (C's truncating division).
_ROUND_DIV = "select((acc - {n} / 2) / {n}, (acc + {n} / 2) / {n}, acc > 0)"
# op -> (initial value, update of acc with v, result from acc and count)
_KINDS = {
    Op.MAX_POOL_2D: ("P.lowest", "max(acc, v)", "acc"),
    Op.AVERAGE_POOL_2D: ("0", "acc + v", _ROUND_DIV.format(n="count")),
}


def _counts(ih: int, oh: int, k: int, s: int, pad: int) -> np.ndarray:
    start = np.arange(oh) * s - pad
    return np.minimum(start + k, ih) - np.maximum(start, 0)


def _pool(op: Op):
    init, update, finish = _KINDS[op]

    def factory(node: Node, ctx: GpuContext) -> list[Program]:
        x, out = ctx.input(0), ctx.output(0)
        require_codes(ctx, x, out)
        if x.dtype != out.dtype or per_tensor(ctx, i=0) != per_tensor(ctx, o=0):
            raise ctx.unsupported("input and output differ in dtype or quantization (LiteRT requires them equal)")
        w = window(node, ctx, x, out)
        if op == Op.AVERAGE_POOL_2D and ((_counts(w.ih, w.oh, w.kh, w.sh, w.pad_top) <= 0).any()
                                         or (_counts(w.iw, w.ow, w.kw, w.sw, w.pad_left) <= 0).any()):
            raise ctx.unsupported("a window covers only padding")
        lo, hi = bounds(node, ctx)
        q = [("lowest", "i32", qrange(x.dtype)[0]), ("lo", "i32", lo), ("hi", "i32", hi)]
        name = f"{node.op.lower()} {x.dtype} {x.shape}->{out.shape}"
        if w.whole_image:
            kept, red = split_dims(x.shape, {1, 2})  # the window holds every pixel: reduce H and W
            return row_programs(ctx, f"global {name}", x.offset, out.offset, kept, red, word="i32", init=init,
                                update=update, finish=f"clamp({finish.replace('count', 'i32(P.total)')}, P.lo, P.hi)",
                                load=load(x.dtype, "P.x_off", "{ridx}"), extra=q, helpers=("qmath",), codes=out)
        if w.kh * w.kw > MAX_PER_THREAD:
            raise ctx.unsupported(f"a {w.kh}x{w.kw} window that is not the whole image (one thread folds a window, "
                                  f"at most {MAX_PER_THREAD} codes)")
        params = [*w.params(), ("x_off", "u32", x.offset), *q]
        return [words_program(f"{name} k{w.kh}x{w.kw}", "qpool2d", out, params, reduction_per_thread=w.kh * w.kw,
                              INIT=init, REDUCE=update, FINISH=finish, LOAD=load(x.dtype, "P.x_off", "e"))]
    return factory


for _op in _KINDS:
    register_case(_op, "webgpu", exact_codes)(_pool(_op))
declare_int8("webgpu", *_KINDS)
