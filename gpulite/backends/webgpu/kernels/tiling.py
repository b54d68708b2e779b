"""TILE, BROADCAST_TO, MIRROR_PAD, SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (any 1-, 2-, 4- or
8-byte dtype): index maps over up to four dims, for the data-movement drivers of :mod:`.movement`."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.movement import fill_value, move_program, row_major_strides
from gpulite.backends.webgpu.program import Program
from gpulite.errors import ShapeError
from gpulite.graph import data_layout as dl
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def _repeat(node: Node, ctx: GpuContext, x: TensorRef, out: TensorRef) -> Program:
    """``out[c] = x[c % x.shape]`` with x's shape right-aligned to out's (TILE, BROADCAST_TO)."""
    ctx.require_same_quant()
    rank = len(out.shape)
    shape = (1,) * (rank - len(x.shape)) + x.shape
    if len(shape) != rank or any(o % i if i else o for o, i in zip(out.shape, shape, strict=True)):
        raise ctx.unsupported(f"{x.shape} does not repeat to {out.shape}")
    dims = [(o, i, t) for o, i, t in zip(out.shape, shape, row_major_strides(shape), strict=True) if o != 1]
    if len(dims) > 4:
        raise ctx.unsupported(f"{len(dims)} dims (the kernel has 4)")
    dims = [(1, 1, 0)] * (4 - len(dims)) + dims
    params = [("out_shape", "vec4u", [d[0] for d in dims]), ("in_shape", "vec4u", [d[1] for d in dims]),
              ("in_strides", "vec4u", [d[2] for d in dims])]
    return move_program(ctx, f"{node.op.lower()} {x.shape}->{out.shape}", "tile", x, out, params)


@register_kernel(Op.TILE, "webgpu")
def tile(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    if ctx.const(1) is None:
        raise ctx.unsupported("multiples computed at run time")
    mult = layout.ints(ctx.const(1))
    if len(mult) != len(x.shape) or tuple(d * m for d, m in zip(x.shape, mult, strict=True)) != out.shape:
        raise ctx.unsupported(f"multiples {mult} of {x.shape} do not give {out.shape}")
    return _repeat(node, ctx, x, out)


@register_kernel(Op.BROADCAST_TO, "webgpu")
def broadcast_to(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    if len(x.shape) > len(out.shape) or any(
            i not in (1, o) for i, o in zip(x.shape[::-1], out.shape[::-1], strict=False)):
        raise ctx.unsupported(f"{x.shape} does not broadcast to {out.shape}")
    return _repeat(node, ctx, x, out)


@register_kernel(Op.MIRROR_PAD, "webgpu")
def mirror_pad(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    if ctx.const(1) is None:
        raise ctx.unsupported("paddings computed at run time")
    pads = layout.ints(ctx.const(1))
    rank = len(x.shape)
    sym = int(getattr(node.options, "mode", 0) == 1)  # MirrorPadMode: REFLECT = 0, SYMMETRIC = 1
    if len(pads) != 2 * rank or rank > 4:
        raise ctx.unsupported(f"paddings {pads} for {x.shape} (at most 4 dims)")
    before, after = pads[0::2], pads[1::2]
    limit = [n - 1 + sym for n in x.shape]
    if (any(b < 0 or a < 0 or b > m or a > m for b, a, m in zip(before, after, limit, strict=True))
            or tuple(n + b + a for n, b, a in zip(x.shape, before, after, strict=True)) != out.shape):
        raise ctx.unsupported(f"paddings {pads} of {x.shape} for {out.shape}")
    pad = 4 - rank
    params = [("out_shape", "vec4u", [1] * pad + list(out.shape)), ("in_shape", "vec4u", [1] * pad + list(x.shape)),
              ("in_strides", "vec4u", [0] * pad + row_major_strides(x.shape)), ("before", "vec4i", [0] * pad + before),
              ("sym", "u32", sym)]
    return move_program(ctx, f"mirror_pad {x.shape}->{out.shape}", "mirror", x, out, params)


def _as_4d(shape: tuple[int, ...], m: int) -> list[int]:
    """[N, spatial (1 or 2, padded to 2), rest folded] of a SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND tensor."""
    return [shape[0], *shape[1:1 + m], *([1] * (2 - m)), int(np.prod(shape[1 + m:], dtype=np.int64))]


def _batch_space(node: Node, ctx: GpuContext, to_batch: bool) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    if ctx.const(1) is None or ctx.const(2) is None:
        raise ctx.unsupported("block shape and paddings / crops computed at run time")
    rule = dl.space_to_batch_shape if to_batch else dl.batch_to_space_shape
    try:
        block, amounts, shape = rule(node, x.shape, ctx.const(1), ctx.const(2))
    except ShapeError as e:
        raise ctx.unsupported(str(e)) from None
    m = len(block)
    if tuple(shape) != out.shape or m not in (1, 2):
        raise ctx.unsupported(f"{x.shape} -> {out.shape} with block {block} (1 or 2 spatial dims)")
    params = [("out_shape", "vec4u", _as_4d(out.shape, m)), ("in_shape", "vec4u", _as_4d(x.shape, m)),
              ("block", "vec4u", [*block, 1][:2]), ("lead", "vec4i", [a for a, _ in amounts] + [0] * (2 - m))]
    value = None
    if to_batch:  # padding: the output's zero point, as LiteRT
        q = ctx.out_info(0).quant
        value = fill_value(ctx, int(q.zero_point[0]) if q is not None and q.zero_point.size else 0, x.dtype)
    kind = "space_to_batch" if to_batch else "batch_to_space"
    return move_program(ctx, f"{kind} {x.shape}->{out.shape}", kind, x, out, params, value)


register_kernel(Op.SPACE_TO_BATCH_ND, "webgpu", lambda node, ctx: _batch_space(node, ctx, True))
register_kernel(Op.BATCH_TO_SPACE_ND, "webgpu", lambda node, ctx: _batch_space(node, ctx, False))
