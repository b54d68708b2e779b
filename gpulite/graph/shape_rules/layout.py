"""Shapes of layout, resize, reduction and gather ops.

The index arithmetic lives in :mod:`gpulite.graph.layout`, which the CPU kernels share.
"""

from __future__ import annotations

from gpulite.errors import ShapeError
from gpulite.graph import layout
from gpulite.graph.shapes import shape_rule
from gpulite.graph.strided_slice import resolve_strided_slice
from gpulite.model.opdefs import Op


@shape_rule(Op.RESHAPE)
def _reshape(node, ins, consts):
    has_shape = len(node.inputs) > 1 and node.inputs[1] >= 0
    shape_const = consts[1] if has_shape else None
    return [layout.reshape_shape(node, tuple(ins[0]), shape_const, has_shape)]


@shape_rule(Op.SQUEEZE)
def _squeeze(node, ins, consts):
    return [layout.squeeze_shape(node, tuple(ins[0]))]


@shape_rule(Op.EXPAND_DIMS)
def _expand_dims(node, ins, consts):
    return [layout.expand_dims_shape(node, tuple(ins[0]), consts[1])]


@shape_rule(Op.PAD, Op.PADV2)
def _pad(node, ins, consts):
    pads = layout.pad_amounts(node, tuple(ins[0]), consts[1])
    return [tuple(d + a + b for d, (a, b) in zip(ins[0], pads, strict=True))]


@shape_rule(Op.CONCATENATION)
def _concat(node, ins, consts):
    first = tuple(ins[0])
    axis = layout.normalize_axis(getattr(node.options, "axis", 0), len(first), node)
    total = 0
    for s in ins:
        if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first, strict=True)) if i != axis):
            raise ShapeError(f"{layout.where(node)}input shapes {[list(x) for x in ins]} differ off axis {axis}")
        total += s[axis]
    return [(*first[:axis], total, *first[axis + 1:])]


@shape_rule(Op.STRIDED_SLICE)
def _strided_slice(node, ins, consts):
    return [resolve_strided_slice(node, tuple(ins[0]), consts[1], consts[2], consts[3]).out_shape]


@shape_rule(Op.SLICE)
def _slice(node, ins, consts):
    win = layout.slice_window(node, tuple(ins[0]), consts[1], consts[2])
    return [tuple(s.stop - s.start for s in win)]


@shape_rule(Op.TRANSPOSE)
def _transpose(node, ins, consts):
    perm = layout.ints(consts[1]) if consts[1] is not None else None
    if perm is None or sorted(perm) != list(range(len(ins[0]))):
        raise ShapeError(f"{layout.where(node)}perm {perm} is not a constant permutation of {len(ins[0])} dims")
    return [tuple(ins[0][p] for p in perm)]


@shape_rule(Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR)
def _resize(node, ins, consts):
    size = layout.ints(consts[1]) if consts[1] is not None else None
    if len(ins[0]) != 4 or size is None or len(size) != 2 or min(size) <= 0:
        raise ShapeError(f"{layout.where(node)}expected a 4-D input and a constant positive size [h, w]; "
                         f"got input {list(ins[0])}, size {size}")
    n, _, _, c = ins[0]
    return [(n, size[0], size[1], c)]


@shape_rule(Op.MEAN, Op.SUM, Op.REDUCE_MAX, Op.REDUCE_MIN)
def _reduce(node, ins, consts):
    axes = layout.reduce_axes(node, len(ins[0]), consts[1])
    return [layout.reduced_shape(tuple(ins[0]), axes, bool(getattr(node.options, "keep_dims", False)))]


def _block(node, ins):
    bs = int(getattr(node.options, "block_size", 0))
    if len(ins[0]) != 4 or bs < 1:
        raise ShapeError(f"{layout.where(node)}expected a 4-D input and block_size >= 1; got {list(ins[0])}, {bs}")
    return bs


@shape_rule(Op.DEPTH_TO_SPACE)
def _depth_to_space(node, ins, consts):
    bs = _block(node, ins)
    n, h, w, c = ins[0]
    if c % (bs * bs):
        raise ShapeError(f"{layout.where(node)}depth {c} is not divisible by block_size² = {bs * bs}")
    return [(n, h * bs, w * bs, c // (bs * bs))]


@shape_rule(Op.SPACE_TO_DEPTH)
def _space_to_depth(node, ins, consts):
    bs = _block(node, ins)
    n, h, w, c = ins[0]
    if h % bs or w % bs:
        raise ShapeError(f"{layout.where(node)}height {h} and width {w} must be multiples of block_size {bs}")
    return [(n, h // bs, w // bs, c * bs * bs)]


@shape_rule(Op.GATHER)
def _gather(node, ins, consts):
    return [layout.gather_shape(node, tuple(ins[0]), tuple(ins[1]))[2]]


@shape_rule(Op.ARG_MAX, Op.ARG_MIN)
def _arg(node, ins, consts):
    axis = layout.ints(consts[1]) if consts[1] is not None else []
    if len(axis) != 1:
        raise ShapeError(f"{layout.where(node)}expected one constant axis, got {axis or 'a run-time value'}")
    a = layout.normalize_axis(axis[0], len(ins[0]), node)
    return [tuple(d for i, d in enumerate(ins[0]) if i != a)]

