"""PAD, PADV2, SLICE and STRIDED_SLICE (float32, rank <= 4): one gather kernel.

Each output coordinate ``c`` reads input coordinate ``begin + c * stride``; outside the input
it writes the pad value. Begin/stride follow TFLite's ``strided_slice_logic.h`` and are
computed here, once, from the constant operands.
"""

from __future__ import annotations

import math

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg


def _gather(name: str, x: TensorRef, out: TensorRef, out_full: list[int], begin: list[int],
            stride: list[int], value: float = 0.0) -> Program:
    """The gather program; ``out_full`` is the output shape before shrunk axes are dropped."""
    pad = 4 - len(x.shape)
    in_shape = [1] * pad + list(x.shape)
    strides = [int(np.prod(in_shape[d + 1:], dtype=np.int64)) for d in range(4)]
    params = [
        ("out_shape", "vec4u", [1] * pad + out_full), ("in_shape", "vec4u", in_shape),
        ("begin", "vec4i", [0] * pad + begin), ("stride", "vec4i", [1] * pad + stride),
        ("in_strides", "vec4u", strides), ("value", "f32", value),
        ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
    ]
    return make_program(name, "gather4d", params, out.size)


def _operand(ctx: GpuContext, i: int, rank: int, what: str) -> np.ndarray:
    v = ctx.const(i)
    if v is None:
        raise ctx.unsupported(f"{what} computed at run time")
    return np.asarray(v).astype(np.int64).reshape(-1 if what != "paddings" else (rank, 2))


def _check(ctx: GpuContext, x: TensorRef, out: TensorRef) -> None:
    ctx.require_f32(x, out)
    if not 1 <= len(x.shape) <= 4:
        raise ctx.unsupported(f"rank {len(x.shape)} (kernel handles 1 to 4)")


def _pad(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    _check(ctx, x, out)
    rank = len(x.shape)
    pads = _operand(ctx, 1, rank, "paddings")
    if (pads < 0).any():
        raise ctx.unsupported("negative paddings")
    value = 0.0
    if ctx.has_input(2):
        c = ctx.const(2)
        if c is None:
            raise ctx.unsupported("pad value computed at run time")
        value = float(np.asarray(c).reshape(-1)[0])
    full = [int(d + a + b) for d, (a, b) in zip(x.shape, pads, strict=True)]
    if tuple(full) != out.shape:
        raise ctx.unsupported(f"paddings {pads.tolist()} of {x.shape} give {full}, not {out.shape}")
    return _gather(f"{node.op.lower()} {x.shape}->{out.shape}", x, out, full, [-int(a) for a, _ in pads],
                   [1] * rank, value)


for _op in ("PAD", "PADV2"):
    register_kernel(_op, "webgpu", _pad)


@register_kernel("SLICE", "webgpu")
def slice_(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    _check(ctx, x, out)
    rank = len(x.shape)
    begin, size = _operand(ctx, 1, rank, "begin"), _operand(ctx, 2, rank, "size")
    full = [int(d - b if s == -1 else s) for d, b, s in zip(x.shape, begin, size, strict=True)]
    if tuple(full) != out.shape:
        raise ctx.unsupported(f"slice {begin.tolist()}+{size.tolist()} of {x.shape} is not {out.shape}")
    return _gather(f"slice {x.shape}->{out.shape}", x, out, full, [int(b) for b in begin], [1] * rank)


def _start_stop(dim: int, b: int, e: int, s: int, d: int, o: sg.StridedSliceOptions) -> tuple[int, int]:
    """TFLite's StartForAxis / StopForAxis for axis ``d``."""
    big = 2**31 - 1
    if o.begin_mask >> d & 1:
        b = -big - 1 if s > 0 else big
    b = b + dim if b < 0 else b
    b = min(max(b, 0), dim) if s > 0 else min(max(b, -1), dim - 1)
    if o.shrink_axis_mask >> d & 1:
        return b, b + 1
    if o.end_mask >> d & 1:
        e = big if s > 0 else -big - 1
    e = e + dim if e < 0 else e
    e = min(max(e, 0), dim) if s > 0 else min(max(e, -1), dim - 1)
    return b, e


@register_kernel("STRIDED_SLICE", "webgpu")
def strided_slice(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    _check(ctx, x, out)
    o = node.options or sg.StridedSliceOptions()
    if o.ellipsis_mask or o.new_axis_mask:
        raise ctx.unsupported("ellipsis_mask / new_axis_mask")
    rank = len(x.shape)
    begin, end = _operand(ctx, 1, rank, "begin"), _operand(ctx, 2, rank, "end")
    strides = _operand(ctx, 3, rank, "strides") if ctx.has_input(3) else np.ones(rank, np.int64)
    if not len(begin) == len(end) == len(strides) == rank or (strides == 0).any():
        raise ctx.unsupported(f"begin/end/strides {begin.tolist()}/{end.tolist()}/{strides.tolist()} for rank {rank}")
    starts, full, kept = [], [], []
    for d in range(rank):
        s, e = int(strides[d]), int(end[d]) + (int(begin[d]) if o.offset else 0)
        b, e = _start_stop(x.shape[d], int(begin[d]), e, s, d, o)
        n = max(0, math.ceil((e - b) / s))
        starts.append(b)
        full.append(n)
        if not o.shrink_axis_mask >> d & 1:
            kept.append(n)
    if tuple(kept) != out.shape:
        raise ctx.unsupported(f"computed output {kept} is not the model's {out.shape}")
    return _gather(f"strided_slice {x.shape}->{out.shape}", x, out, full, starts, [int(s) for s in strides])
