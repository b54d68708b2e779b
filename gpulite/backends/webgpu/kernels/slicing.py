"""PAD, PADV2, SLICE, STRIDED_SLICE, TRANSPOSE, SPLIT, SPLIT_V, UNPACK and REVERSE_V2 (any
dtype): one strided-gather kernel (per output).

Each output coordinate ``c`` reads input coordinate ``begin + c * step`` per dim (dims may be
permuted, for TRANSPOSE); outside the input it writes the pad value. Begin/step come from the
constant operands, once, with the same index logic as the CPU kernels (TFLite's).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.movement import fill_value, row_major_strides, strided_gather
from gpulite.backends.webgpu.program import Program
from gpulite.errors import ShapeError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.graph.strided_slice import resolve_strided_slice
from gpulite.model.opdefs import Op


def _operand(ctx: GpuContext, i: int, what: str) -> list[int]:
    v = ctx.const(i)
    if v is None:
        raise ctx.unsupported(f"{what} computed at run time")
    return layout.ints(v)


def _pad(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    try:
        pads = layout.pad_amounts(node, x.shape, ctx.const(1))
    except ShapeError as e:
        raise ctx.unsupported(str(e)) from None
    full = tuple(d + a + b for d, (a, b) in zip(x.shape, pads, strict=True))
    if full != out.shape:
        raise ctx.unsupported(f"paddings {pads} of {x.shape} give {full}, not {out.shape}")
    if ctx.has_input(2):  # a PAD with a third input pads with it, as PADV2 (LiteRT: one Prepare for both)
        value = ctx.input(2)  # read at run time: it may be computed by another node
        if value.size != 1 or value.dtype != x.dtype:
            raise ctx.unsupported(f"pad value of shape {value.shape} {value.dtype}")
    else:  # quantized PAD pads with the output zero point, as TFLite
        q = ctx.out_info(0).quant
        zp = int(q.zero_point[0]) if q is not None and q.zero_point.size else 0
        if zp and x.dtype.kind == "f":
            raise ctx.unsupported("float tensor with a zero point")
        value = fill_value(ctx, zp, x.dtype)
    st = row_major_strides(x.shape)
    dims = [(n, -a, 1, d, t) for n, (a, _), d, t in zip(out.shape, pads, x.shape, st, strict=True)]
    return strided_gather(ctx, f"{node.op.lower()} {x.shape}->{out.shape}", x, out, dims, value)


for _op in (Op.PAD, Op.PADV2):
    register_kernel(_op, "webgpu", _pad)


@register_kernel(Op.SLICE, "webgpu")
def slice_(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    begin, size = _operand(ctx, 1, "begin"), _operand(ctx, 2, "size")
    if not len(begin) == len(size) == len(x.shape):
        raise ctx.unsupported(f"begin {begin} / size {size} for rank {len(x.shape)}")
    full = tuple(d - b if s == -1 else s for d, b, s in zip(x.shape, begin, size, strict=True))
    if full != out.shape or any(b < 0 or b + n > d for b, n, d in zip(begin, full, x.shape, strict=True)):
        raise ctx.unsupported(f"slice {begin}+{size} of {x.shape} is not {out.shape}")
    dims = [(n, b, 1, d, t) for n, b, d, t in zip(full, begin, x.shape, row_major_strides(x.shape), strict=True)]
    return strided_gather(ctx, f"slice {x.shape}->{out.shape}", x, out, dims)


@register_kernel(Op.STRIDED_SLICE, "webgpu")
def strided_slice(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    if ctx.const(1) is None or ctx.const(2) is None or (ctx.has_input(3) and ctx.const(3) is None):
        raise ctx.unsupported("begin/end/strides computed at run time")
    strides = ctx.const(3) if ctx.has_input(3) else np.ones(np.size(ctx.const(1)), np.int32)
    try:
        r = resolve_strided_slice(node, x.shape, ctx.const(1), ctx.const(2), strides)
    except ShapeError as e:
        raise ctx.unsupported(str(e)) from None
    if tuple(r.out_shape) != out.shape:
        raise ctx.unsupported(f"computed output {r.out_shape} is not the model's {out.shape}")
    dims = []
    for d, sl, t in zip(r.effective_shape, r.slices, row_major_strides(r.effective_shape), strict=True):
        picked = range(d)[sl]
        dims.append((len(picked), picked.start if len(picked) else 0, picked.step, d, t))
    return strided_gather(ctx, f"strided_slice {x.shape}->{out.shape}", x, out, dims)


@register_kernel(Op.TRANSPOSE, "webgpu")
def transpose(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    perm = _operand(ctx, 1, "perm")
    rank = len(x.shape)
    perm = [p + rank if p < 0 else p for p in perm]
    if sorted(perm) != list(range(rank)) or tuple(x.shape[p] for p in perm) != out.shape:
        raise ctx.unsupported(f"perm {perm} of {x.shape} does not give {out.shape}")
    st = row_major_strides(x.shape)
    dims = [(x.shape[p], 0, 1, x.shape[p], st[p]) for p in perm]
    return strided_gather(ctx, f"transpose {x.shape} perm {perm}", x, out, dims)


def _axis(ctx: GpuContext, axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise ctx.unsupported(f"axis {axis} for rank {rank}")
    return a


def _parts(node: Node, ctx: GpuContext, x_slot: int, axis: int) -> list[Program]:
    """One strided gather per output: consecutive slices of input ``x_slot`` along ``axis``
    (SPLIT, SPLIT_V; UNPACK's outputs drop that axis, each a slice of size 1)."""
    x = ctx.input(x_slot)
    ctx.require_same_quant(x_slot)
    st = row_major_strides(x.shape)
    programs, start = [], 0
    for k in range(len(node.outputs)):
        info = ctx.out_info(k)
        size = 1 if node.op == Op.UNPACK else (info.shape[axis] if len(info.shape) == len(x.shape) else -1)
        want = x.shape[:axis] + ((size,) if node.op != Op.UNPACK else ()) + x.shape[axis + 1:]
        if size < 0 or tuple(info.shape) != want or info.dtype != x.dtype:
            raise ctx.unsupported(f"output {k} {tuple(info.shape)} {info.dtype}: no slice of {x.shape} on axis {axis}")
        if info.nbytes:
            ctx.require_same_quant(x_slot, k)
            dims = [(size if d == axis else n, start if d == axis else 0, 1, n, t)
                    for d, (n, t) in enumerate(zip(x.shape, st, strict=True))]
            programs.append(strided_gather(ctx, f"{node.op.lower()} {x.shape} part {k}", x, ctx.output(k), dims))
        start += size
    if start != x.shape[axis]:
        raise ctx.unsupported(f"parts of {start} along axis {axis} of {x.shape}")
    return programs


@register_kernel(Op.SPLIT, "webgpu")
def split(node: Node, ctx: GpuContext) -> list[Program]:
    x = ctx.input(1)
    return _parts(node, ctx, 1, _axis(ctx, _operand(ctx, 0, "axis")[0], len(x.shape)))


@register_kernel(Op.SPLIT_V, "webgpu")
def split_v(node: Node, ctx: GpuContext) -> list[Program]:
    x = ctx.input(0)
    return _parts(node, ctx, 0, _axis(ctx, _operand(ctx, 2, "axis")[0], len(x.shape)))


@register_kernel(Op.UNPACK, "webgpu")
def unpack(node: Node, ctx: GpuContext) -> list[Program]:
    x = ctx.input(0)
    return _parts(node, ctx, 0, _axis(ctx, getattr(node.options, "axis", 0), len(x.shape)))


@register_kernel(Op.REVERSE_V2, "webgpu")
def reverse_v2(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    axes = {_axis(ctx, a, len(x.shape)) for a in _operand(ctx, 1, "axes")}
    if x.shape != out.shape:
        raise ctx.unsupported(f"input {x.shape} but output {out.shape}")
    dims = [(n, n - 1 if d in axes else 0, -1 if d in axes else 1, n, t)
            for d, (n, t) in enumerate(zip(x.shape, row_major_strides(x.shape), strict=True))]
    return strided_gather(ctx, f"reverse_v2 {x.shape} axes {sorted(axes)}", x, out, dims)
