"""PACK, UNPACK, SPLIT, SPLIT_V, TILE, REVERSE_V2, MIRROR_PAD, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND.

Bytes move, values never change, so every dtype but strings is taken (quantized tensors
carry their codes; SPACE_TO_BATCH_ND pads with the output's zero point, as LiteRT does). A
quantization that differs between input and output, which LiteRT's Prepare refuses for PACK,
UNPACK, MIRROR_PAD and the two batch ops, is refused before (``Operands.same_quant``).
The views each ``run`` copies through (slices, interleaved reshapes) are made once in the
factory from the constant parameters, checked by :mod:`gpulite.graph.data_layout`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph import data_layout as dl
from gpulite.graph.ir import Node
from gpulite.graph.layout import normalize_axis, where
from gpulite.model.opdefs import Op

_UNPACK_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.int32, np.uint8, np.int8, np.int16, np.bool_))


def _same_dtype(node: Node, ctx: CpuContext, inputs, outputs, allowed: tuple[np.dtype, ...] | None = None) -> None:
    dts = [ctx.in_info(i).dtype for i in inputs] + [ctx.out_info(i).dtype for i in outputs]
    if len(set(dts)) != 1 or dts[0].kind in "OSU":
        raise unsupported(node, f"data inputs and outputs must share one numeric dtype, got {[str(d) for d in dts]}")
    if allowed is not None and dts[0] not in allowed:
        raise unsupported(node, f"dtype {dts[0]}; LiteRT's kernel takes {', '.join(map(str, allowed))}")


@register_kernel(Op.PACK, "cpu")
def pack(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Stack the inputs along a new ``axis``."""
    n = len(node.inputs)
    arity(node, n)
    _same_dtype(node, ctx, range(n), [0])
    xs, out = [ctx.input(i) for i in range(n)], ctx.output(0)
    check_out(node, out, dl.pack_shape(node, [x.shape for x in xs]))
    axis = normalize_axis(int(node.options.axis), xs[0].ndim + 1, node)

    def run() -> None:
        np.stack(xs, axis=axis, out=out)
    return run


@register_kernel(Op.UNPACK, "cpu")
def unpack(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Split the input along ``axis`` into ``num`` outputs, that dim removed."""
    arity(node, 1, len(node.outputs))
    _same_dtype(node, ctx, [0], range(len(node.outputs)), _UNPACK_DTYPES)
    x = ctx.input(0)
    shapes = dl.unpack_shapes(node, x.shape, len(node.outputs))
    axis = normalize_axis(int(node.options.axis), x.ndim, node)
    pairs = []
    for i, s in enumerate(shapes):
        check_out(node, ctx.output(i), s)
        pairs.append((ctx.output(i), x[(slice(None),) * axis + (i,)]))

    def run() -> None:
        for out, src in pairs:
            np.copyto(out, src)
    return run


def _split(node: Node, ctx: CpuContext, data: int, axis_in: int, sizes_in: int | None) -> Callable[[], None]:
    x = ctx.input(data)
    _same_dtype(node, ctx, [data], range(len(node.outputs)))
    axis, sizes = dl.split_sizes(node, x.shape, ctx.const(axis_in), ctx.const(sizes_in) if sizes_in else None,
                                 len(node.outputs))
    pairs, start = [], 0
    for i, s in enumerate(sizes):
        out = ctx.output(i)
        check_out(node, out, (*x.shape[:axis], s, *x.shape[axis + 1:]))
        pairs.append((out, x[(slice(None),) * axis + (slice(start, start + s),)]))
        start += s

    def run() -> None:
        for out, src in pairs:
            np.copyto(out, src)
    return run


@register_kernel(Op.SPLIT, "cpu")
def split(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Equal parts along the constant axis (inputs: axis, data)."""
    arity(node, 2, len(node.outputs))
    return _split(node, ctx, 1, 0, None)


@register_kernel(Op.SPLIT_V, "cpu")
def split_v(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Parts of the constant ``size_splits`` (one -1 takes the rest) along the constant axis."""
    arity(node, 3, len(node.outputs))
    return _split(node, ctx, 0, 2, 1)


@register_kernel(Op.TILE, "cpu")
def tile(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Repeat the input ``multiples[d]`` times along each dim d (written through an interleaved view)."""
    arity(node, 2)
    _same_dtype(node, ctx, [0], [0])
    x, out = ctx.input(0), ctx.output(0)
    shape = dl.tile_shape(node, x.shape, ctx.const(1))
    check_out(node, out, shape)
    m = dl.const_ints(node, ctx.const(1), "multiples")
    dst = out.reshape([v for k, d in zip(m, x.shape, strict=True) for v in (k, d)])
    src = x.reshape([v for d in x.shape for v in (1, d)])

    def run() -> None:
        np.copyto(dst, src)
    return run


@register_kernel(Op.REVERSE_V2, "cpu")
def reverse_v2(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Reverse the input along the constant axes."""
    arity(node, 2)
    _same_dtype(node, ctx, [0], [0])
    x, out = ctx.input(0), ctx.output(0)
    check_out(node, out, x.shape)
    flipped = np.flip(x, dl.reverse_axes(node, x.ndim, ctx.const(1)))  # a view

    def run() -> None:
        np.copyto(out, flipped)
    return run


@register_kernel(Op.MIRROR_PAD, "cpu")
def mirror_pad(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Pad by mirroring: REFLECT leaves the edge out, SYMMETRIC repeats it."""
    arity(node, 2)
    _same_dtype(node, ctx, [0], [0])
    x, out = ctx.input(0), ctx.output(0)
    pads = dl.mirror_pad_amounts(node, x.shape, ctx.const(1))
    check_out(node, out, tuple(d + a + b for d, (a, b) in zip(x.shape, pads, strict=True)))
    mode = "symmetric" if int(node.options.mode) == 1 else "reflect"

    def run() -> None:
        np.copyto(out, np.pad(x, pads, mode=mode))
    return run


def _pad_value(ctx: CpuContext) -> int:
    q = ctx.out_info(0).quant
    return int(q.zero_point[0]) if q is not None and q.zero_point.size else 0


@register_kernel(Op.SPACE_TO_BATCH_ND, "cpu")
def space_to_batch_nd(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Pad the spatial dims, then move ``block_shape`` tiles of them into the batch."""
    arity(node, 3)
    _same_dtype(node, ctx, [0], [0])
    x, out = ctx.input(0), ctx.output(0)
    block, pads, shape = dl.space_to_batch_shape(node, x.shape, ctx.const(1), ctx.const(2))
    check_out(node, out, shape)
    m = len(block)
    padded = np.full((x.shape[0], *(d + a + b for d, (a, b) in zip(x.shape[1:1 + m], pads, strict=True)),
                      *x.shape[1 + m:]), _pad_value(ctx), x.dtype)
    center = padded[(slice(None), *(slice(a, a + d) for d, (a, _) in zip(x.shape[1:1 + m], pads, strict=True)))]
    # [N, s1/b1, b1, s2/b2, b2, rest] -> [b1, b2, N, s1/b1, s2/b2, rest]
    split = padded.reshape(x.shape[0], *(v for s, b in zip(shape[1:1 + m], block, strict=True) for v in (s, b)),
                           *x.shape[1 + m:])
    perm = (*(2 + 2 * i for i in range(m)), 0, *(1 + 2 * i for i in range(m)), *range(1 + 2 * m, split.ndim))
    src = split.transpose(perm)
    dst = out.reshape(src.shape)

    def run() -> None:
        np.copyto(center, x)
        np.copyto(dst, src)
    return run


@register_kernel(Op.BATCH_TO_SPACE_ND, "cpu")
def batch_to_space_nd(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Move ``block_shape`` tiles from the batch into the spatial dims, then crop."""
    arity(node, 3)
    _same_dtype(node, ctx, [0], [0])
    x, out = ctx.input(0), ctx.output(0)
    block, crops, shape = dl.batch_to_space_shape(node, x.shape, ctx.const(1), ctx.const(2))
    check_out(node, out, shape)
    m, n = len(block), x.shape[0] // math.prod(block)
    spatial = x.shape[1:1 + m]
    # [b1, b2, N, s1, s2, rest] -> [N, s1, b1, s2, b2, rest]
    src = x.reshape(*block, n, *x.shape[1:]).transpose(
        m, *(v for i in range(m) for v in (m + 1 + i, i)), *range(2 * m + 1, x.ndim + m))
    full = np.empty((n, *(s * b for s, b in zip(spatial, block, strict=True)), *x.shape[1 + m:]), x.dtype)
    full_split = full.reshape(src.shape)
    crop = full[(slice(None), *(slice(a, a + d) for (a, _), d in zip(crops, shape[1:1 + m], strict=True)))]
    if crop.shape != out.shape:
        raise ShapeError(f"{where(node)}cropped block {list(crop.shape)} differs from the output {list(out.shape)}")

    def run() -> None:
        np.copyto(full_split, src)
        np.copyto(out, crop)
    return run
