"""Shapes of MediaPipe's custom ops, as their ``Prepare`` functions (or GPU parsers) set them.

:func:`transpose_conv_bias_geometry` is shared with the CPU kernel, so shape inference and
execution cannot disagree.
"""

from __future__ import annotations

from typing import TypeVar

from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import shape_rule
from gpulite.model.custom_options import TransformTensorBilinearOptions, TransposeConvBiasOptions
from gpulite.model.opdefs import Op

T = TypeVar("T")


def transpose_conv_bias_geometry(in_size: int, filter_size: int, stride: int, padding: str) -> tuple[int, int]:
    """Output length and top/left offset of ``Convolution2DTransposeBias`` along one axis.

    Parameters
    ----------
    in_size, filter_size, stride : int
        Input length, filter length and stride along the axis.
    padding : {"SAME", "VALID"}

    Returns
    -------
    out_size, pad_before : int
        MediaPipe's ``Prepare``/``Eval`` arithmetic (``transpose_conv_bias.cc``): SAME
        trims ``max(0, filter - (in - 1) % stride - 1)`` from the full
        ``stride * (in - 1) + filter`` and starts ``trim // 2`` in. This is not TFLite's
        TRANSPOSE_CONV rule (``in * stride`` for SAME): they differ when the filter
        is not a multiple of the stride.
    """
    trim = max(0, filter_size - (in_size - 1) % stride - 1) if padding == "SAME" else 0
    return stride * (in_size - 1) + filter_size - trim, trim // 2


def _options(node: Node, cls: type[T]) -> T:
    """The node's custom options, decoded at load (not for an op version its kernels refuse)."""
    if not isinstance(node.options, cls):
        raise ShapeError(f"node {node.index} ({node.op}) version {node.version}: expected {cls.__name__} options, "
                         f"got {type(node.options).__name__}")
    return node.options


@shape_rule(Op.Convolution2DTransposeBias)
def _transpose_conv_bias(node: Node, ins, consts):
    if len(ins) != 3 or len(ins[0]) != 4 or len(ins[1]) != 4:
        raise ShapeError(f"node {node.index} ({node.op}): expected input NHWC, weights OHWI and a bias, "
                         f"got shapes {[list(s) for s in ins]}")
    opts = _options(node, TransposeConvBiasOptions)
    n, h, w, _ = ins[0]
    o, fh, fw, _ = ins[1]
    oh, _ = transpose_conv_bias_geometry(h, fh, opts.stride_h, opts.padding)
    ow, _ = transpose_conv_bias_geometry(w, fw, opts.stride_w, opts.padding)
    return [(n, oh, ow, o)]


@shape_rule(Op.Landmarks2TransformMatrix)
def _landmarks_to_transform_matrix(node: Node, ins, consts):
    return [(1, 4, 4)]


@shape_rule(Op.TransformTensorBilinear)
def _transform_tensor_bilinear(node: Node, ins, consts):
    if len(ins[0]) != 4:
        raise ShapeError(f"node {node.index} ({node.op}): expected input (1, H, W, C), got {list(ins[0])}")
    opts = _options(node, TransformTensorBilinearOptions)
    return [(1, opts.output_height, opts.output_width, ins[0][3])]


@shape_rule(Op.TransformLandmarks)
def _transform_landmarks(node: Node, ins, consts):
    return [tuple(ins[0])]
