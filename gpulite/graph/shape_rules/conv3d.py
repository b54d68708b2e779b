"""Shapes of CONV_3D (NDHWC input, DHWIO filter) and CONV_3D_TRANSPOSE, with conv's ``ComputeOutSize`` per axis."""

from __future__ import annotations

from gpulite.errors import ShapeError
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.conv import out_size
from gpulite.graph.shapes import shape_rule
from gpulite.model.opdefs import Op


def conv3d_geometry(node, x: tuple[int, ...], f: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """``(strides, dilations, output spatial sizes)`` over (depth, height, width)."""
    if len(x) != 5 or len(f) != 5 or x[4] != f[3]:
        raise ShapeError(f"{where(node)}expected an input [n, d, h, w, c] and a filter [kd, kh, kw, c, out], got "
                         f"{list(x)} and {list(f)}")
    o = node.options
    strides = (o.stride_d, o.stride_h, o.stride_w)
    dilations = (o.dilation_d_factor, o.dilation_h_factor, o.dilation_w_factor)
    outs = tuple(out_size(o.padding, x[1 + i], f[i], strides[i], dilations[i]) for i in range(3))
    return strides, dilations, outs


@shape_rule(Op.CONV_3D)
def _conv3d(node, ins, consts):
    *_, outs = conv3d_geometry(node, tuple(ins[0]), tuple(ins[1]))
    return [(ins[0][0], *outs, ins[1][4])]


def conv3d_transpose_shape(node, output_shape, x: tuple[int, ...], f: tuple[int, ...]) -> tuple[int, ...]:
    """The constant ``output_shape`` of CONV_3D_TRANSPOSE, checked against the input and the
    filter [kd, kh, kw, out, in]: a forward CONV_3D of that shape must give the input's size."""
    if output_shape is None:
        raise ShapeError(f"{where(node)}output_shape is computed at run time; the output's shape is not known")
    shape = tuple(int(v) for v in output_shape.reshape(-1))
    if len(shape) != 5 or len(x) != 5 or len(f) != 5 or f[4] != x[4] or f[3] != shape[4] or shape[0] != x[0]:
        raise ShapeError(f"{where(node)}output_shape {list(shape)}, input {list(x)} and filter {list(f)} do not fit "
                         "(input [n, d, h, w, in], filter [kd, kh, kw, out, in])")
    _, _, back = conv3d_geometry(node, shape, tuple(f))
    if back != tuple(x[1:4]):
        raise ShapeError(f"{where(node)}a CONV_3D of output_shape {list(shape)} gives {list(back)}, not the input's "
                         f"{list(x[1:4])}")
    return shape


@shape_rule(Op.CONV_3D_TRANSPOSE)
def _conv3d_transpose(node, ins, consts):
    return [conv3d_transpose_shape(node, consts[0], tuple(ins[2]), tuple(ins[1]))]
