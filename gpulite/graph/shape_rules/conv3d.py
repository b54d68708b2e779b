"""Shape of CONV_3D (NDHWC input, DHWIO filter), with conv's ``ComputeOutSize`` per axis."""

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
