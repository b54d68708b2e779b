"""Shapes of the convolution family: conv, depthwise, transpose conv, fully connected,
batch matmul and 2-D pooling.

The padding arithmetic here is TFLite's (``ComputeOutSize`` / ``ComputePaddingWithOffset``)
and is shared with the CPU kernels so shape inference and execution can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast, shape_rule
from gpulite.model.opdefs import Op
from gpulite.model.schema_gen import Padding


def out_size(padding: int, size: int, k: int, stride: int, dilation: int = 1) -> int:
    """Output length of a window op along one axis, as TFLite's ``ComputeOutSize``.

    Parameters
    ----------
    padding : int
        ``Padding.SAME`` or ``Padding.VALID``.
    size, k, stride, dilation : int
        Input length, filter length, stride and dilation along the axis.

    Returns
    -------
    int
        The output length (0 when a VALID window does not fit).
    """
    if stride <= 0 or dilation <= 0:
        raise ShapeError(f"stride and dilation must be positive, got stride={stride}, dilation={dilation}")
    eff = (k - 1) * dilation + 1
    if padding == Padding.SAME:
        return (size + stride - 1) // stride
    if padding == Padding.VALID:
        return max((size - eff + stride) // stride, 0)
    raise ShapeError(f"padding must be SAME (0) or VALID (1), got {padding}")


def pad_before_after(size: int, k: int, stride: int, dilation: int, out: int) -> tuple[int, int]:
    """Padding (before, after) so ``out`` windows fit, as TFLite's ``ComputePaddingWithOffset``.

    TFLite puts the odd extra pixel after (``offset``), so ``before = total // 2``.
    """
    eff = (k - 1) * dilation + 1
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def _hw_window(node: Node, h: int, w: int, kh: int, kw: int) -> tuple[int, int]:
    o: Any = node.options
    dh, dw = getattr(o, "dilation_h_factor", 1), getattr(o, "dilation_w_factor", 1)
    return out_size(o.padding, h, kh, o.stride_h, dh), out_size(o.padding, w, kw, o.stride_w, dw)


def _rank4(node: Node, shape: Sequence[int], what: str) -> tuple[int, int, int, int]:
    if len(shape) != 4:
        raise ShapeError(f"node {node.index} ({node.op}): {what} must be 4-D, got shape {list(shape)}")
    return tuple(int(d) for d in shape)  # type: ignore[return-value]


@shape_rule(Op.CONV_2D)
def _conv(node, ins, consts):
    n, h, w, c = _rank4(node, ins[0], "input")
    o, kh, kw, ci = _rank4(node, ins[1], "filter")
    if ci <= 0 or c % ci:
        raise ShapeError(f"node {node.index} (CONV_2D): input has {c} channels, filter expects a multiple of {ci}")
    oh, ow = _hw_window(node, h, w, kh, kw)
    return [(n, oh, ow, o)]


@shape_rule(Op.DEPTHWISE_CONV_2D)
def _depthwise(node, ins, consts):
    n, h, w, _c = _rank4(node, ins[0], "input")
    _, kh, kw, co = _rank4(node, ins[1], "filter")
    oh, ow = _hw_window(node, h, w, kh, kw)
    return [(n, oh, ow, co)]


@shape_rule(Op.TRANSPOSE_CONV)
def _transpose_conv(node, ins, consts):
    if consts[0] is None:
        raise ShapeError(f"node {node.index} (TRANSPOSE_CONV): output_shape must be a constant to infer shapes")
    shape = tuple(int(d) for d in np.asarray(consts[0]).reshape(-1))
    if len(shape) != 4:
        raise ShapeError(f"node {node.index} (TRANSPOSE_CONV): output_shape must have 4 entries, got {list(shape)}")
    n = _rank4(node, ins[2], "input")[0]
    return [(n, *shape[1:])]


@shape_rule(Op.FULLY_CONNECTED)
def _fully_connected(node, ins, consts):
    x, wt = tuple(ins[0]), tuple(ins[1])
    if len(wt) != 2:
        raise ShapeError(f"node {node.index} (FULLY_CONNECTED): weights must be 2-D [out, in], got {list(wt)}")
    units, depth = wt
    size = int(np.prod(x, dtype=np.int64))
    if depth <= 0 or size % depth:
        raise ShapeError(
            f"node {node.index} (FULLY_CONNECTED): input of shape {list(x)} does not split into rows of {depth}")
    if getattr(node.options, "keep_num_dims", False):
        if x[-1] != depth:
            raise ShapeError(f"node {node.index} (FULLY_CONNECTED): keep_num_dims needs the last input dim "
                             f"to be {depth}, got shape {list(x)}")
        return [(*x[:-1], units)]
    return [(size // depth, units)]


@shape_rule(Op.BATCH_MATMUL)
def _batch_matmul(node, ins, consts):
    a, b = tuple(ins[0]), tuple(ins[1])
    if len(a) < 2 or len(b) < 2:
        raise ShapeError(f"node {node.index} (BATCH_MATMUL): operands must be at least 2-D, got {list(a)}, {list(b)}")
    o = node.options
    m, ka = (a[-1], a[-2]) if getattr(o, "adj_x", False) else (a[-2], a[-1])
    kb, nn = (b[-1], b[-2]) if getattr(o, "adj_y", False) else (b[-2], b[-1])
    if ka != kb:
        raise ShapeError(f"node {node.index} (BATCH_MATMUL): inner dims differ: lhs {list(a)} gives {ka}, "
                         f"rhs {list(b)} gives {kb}")
    return [(*broadcast(a[:-2], b[:-2], node), m, nn)]


@shape_rule(Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D)
def _pool(node, ins, consts):
    n, h, w, c = _rank4(node, ins[0], "input")
    o = node.options
    oh = out_size(o.padding, h, o.filter_height, o.stride_h)
    ow = out_size(o.padding, w, o.filter_width, o.stride_w)
    return [(n, oh, ow, c)]
