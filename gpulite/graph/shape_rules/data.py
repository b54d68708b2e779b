"""Shapes of shape-computing, split/pack, tile, gather, scan and block-layout ops.

The arithmetic lives in :mod:`gpulite.graph.data_layout`, which the CPU kernels share.
"""

from __future__ import annotations

from gpulite.errors import ShapeError
from gpulite.graph import data_layout as dl
from gpulite.graph import layout
from gpulite.graph.shapes import shape_rule
from gpulite.model.opdefs import Op


@shape_rule(Op.SHAPE)
def _shape(node, ins, consts):
    return [(len(ins[0]),)]


@shape_rule(Op.RANK)
def _rank(node, ins, consts):
    return [()]


@shape_rule(Op.FILL)
def _fill(node, ins, consts):
    return [dl.dims_shape(node, consts[0], "dims")]


@shape_rule(Op.RANGE)
def _range(node, ins, consts):
    return [dl.range_shape(node, consts)]


@shape_rule(Op.BROADCAST_TO)
def _broadcast_to(node, ins, consts):
    return [dl.broadcast_to_shape(node, tuple(ins[0]), consts[1])]


@shape_rule(Op.BROADCAST_ARGS)
def _broadcast_args(node, ins, consts):
    if len(ins[0]) != 1 or len(ins[1]) != 1:
        raise ShapeError(f"{layout.where(node)}expected two 1-D shape tensors, got {[list(s) for s in ins]}")
    return [(max(ins[0][0], ins[1][0]),)]


@shape_rule(Op.PACK)
def _pack(node, ins, consts):
    return [dl.pack_shape(node, [tuple(s) for s in ins])]


@shape_rule(Op.UNPACK)
def _unpack(node, ins, consts):
    return dl.unpack_shapes(node, tuple(ins[0]), len(node.outputs))


def _parts(shape, axis, sizes):
    return [(*shape[:axis], s, *shape[axis + 1:]) for s in sizes]


@shape_rule(Op.SPLIT)
def _split(node, ins, consts):
    axis, sizes = dl.split_sizes(node, tuple(ins[1]), consts[0], None, len(node.outputs))
    return _parts(tuple(ins[1]), axis, sizes)


@shape_rule(Op.SPLIT_V)
def _split_v(node, ins, consts):
    axis, sizes = dl.split_sizes(node, tuple(ins[0]), consts[2], consts[1], len(node.outputs))
    return _parts(tuple(ins[0]), axis, sizes)


@shape_rule(Op.TILE)
def _tile(node, ins, consts):
    return [dl.tile_shape(node, tuple(ins[0]), consts[1])]


@shape_rule(Op.GATHER_ND)
def _gather_nd(node, ins, consts):
    return [dl.gather_nd_shape(node, tuple(ins[0]), tuple(ins[1]))]


@shape_rule(Op.ONE_HOT)
def _one_hot(node, ins, consts):
    return [dl.one_hot_shape(node, tuple(ins[0]), consts[1])[1]]


@shape_rule(Op.REDUCE_PROD, Op.REDUCE_ANY, Op.REDUCE_ALL)
def _reduce(node, ins, consts):
    axes = layout.reduce_axes(node, len(ins[0]), consts[1])
    return [layout.reduced_shape(tuple(ins[0]), axes, bool(getattr(node.options, "keep_dims", False)))]


@shape_rule(Op.MIRROR_PAD)
def _mirror_pad(node, ins, consts):
    pads = dl.mirror_pad_amounts(node, tuple(ins[0]), consts[1])
    return [tuple(d + a + b for d, (a, b) in zip(ins[0], pads, strict=True))]


@shape_rule(Op.SPACE_TO_BATCH_ND)
def _space_to_batch(node, ins, consts):
    return [dl.space_to_batch_shape(node, tuple(ins[0]), consts[1], consts[2])[2]]


@shape_rule(Op.BATCH_TO_SPACE_ND)
def _batch_to_space(node, ins, consts):
    return [dl.batch_to_space_shape(node, tuple(ins[0]), consts[1], consts[2])[2]]
