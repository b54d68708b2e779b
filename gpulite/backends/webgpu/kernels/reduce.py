"""MEAN, SUM and REDUCE_MAX over a contiguous block of axes (float32)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node

# (initial value, update of acc with v, result from acc and P.r)
_KINDS = {
    "MEAN": ("0.0", "acc + v", "acc / f32(P.r)"),
    "SUM": ("0.0", "acc + v", "acc"),
    "REDUCE_MAX": ("-3.402823e38", "max(acc, v)", "acc"),
}


def outer_r_inner(shape: tuple[int, ...], axes: set[int]) -> tuple[int, int, int] | None:
    """``shape`` as [outer, r, inner] with ``axes`` in r, or None when the reduced axes are not
    one contiguous block (ignoring size-1 axes, which may sit on either side)."""
    big = [d for d in range(len(shape)) if shape[d] != 1]
    red = [d for d in big if d in axes]
    if not red:
        return int(np.prod(shape, dtype=np.int64)), 1, 1
    lo, hi = red[0], red[-1]
    if any(d not in axes for d in big if lo <= d <= hi):
        return None
    prod = lambda ds: int(np.prod([shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    return prod(range(lo)), prod(range(lo, hi + 1)), prod(range(hi + 1, len(shape)))


def _reduce(init: str, update: str, finish: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        x, out = ctx.input(0), ctx.output(0)
        ctx.require_f32(x, out)
        axes_v = ctx.const(1)
        if axes_v is None:
            raise ctx.unsupported("axes computed at run time")
        rank = len(x.shape)
        axes = {int(a) + rank if a < 0 else int(a) for a in np.asarray(axes_v).reshape(-1)}
        split = outer_r_inner(x.shape, axes)
        if split is None:
            raise ctx.unsupported(f"axes {sorted(axes)} of {x.shape} are not one contiguous block")
        outer, r, inner = split
        if outer * inner != out.size or r == 0:
            raise ctx.unsupported(f"reduction of {x.shape} over {sorted(axes)} does not give {out.shape}")
        params = [("r", "u32", r), ("inner", "u32", inner), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        return make_program(f"{node.op.lower()} {x.shape} axes {sorted(axes)}", "reduce", params, out.size,
                            INIT=init, REDUCE=update, FINISH=finish)
    return factory


for _op, _kind in _KINDS.items():
    register_kernel(_op, "webgpu", _reduce(*_kind))
