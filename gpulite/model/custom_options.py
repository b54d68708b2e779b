"""Decode the custom options of MediaPipe's TFLite custom ops into frozen dataclasses.

MediaPipe's ops (``mediapipe/util/tflite/operations/*.cc``) carry their parameters in the
operator's ``custom_options`` bytes in two encodings:

* ``Convolution2DTransposeBias``: a raw C ``TfLiteTransposeConvParams`` struct, read by
  ``reinterpret_cast`` -- little-endian int32 ``padding`` (``TfLitePadding``: 1 SAME,
  2 VALID; *not* the schema's ``Padding`` enum), ``stride_width``, ``stride_height``.
* ``Landmarks2TransformMatrix`` and ``TransformTensorBilinear``: a FlexBuffer map, parsed
  by TFLite's GPU-delegate helpers ``Parse...V2Attributes``.
* ``TransformLandmarks`` (version 2) has no options: its dimensionality comes from the
  landmark tensor's last dimension.

TFLite's own SSD custom op ``TFLite_Detection_PostProcess`` (``lite/kernels/detection_postprocess.cc``)
keeps its options in a FlexBuffer map too, read by its ``Init``.

Only the version-2 encodings are decoded: MediaPipe's CPU op resolver
(``mediapipe/util/tflite/cpu_op_resolver.cc``) registers only version 2 of the three
FlexBuffer ops, so version-1 options never reach a CPU kernel there either.

The decoders are not called directly: each is an op's ``decode`` in
:mod:`gpulite.model.opdefs`, run once by the reader, which puts the result in the node's
``options``. Every malformed blob raises :class:`~gpulite.errors.ModelError` naming the op, what was
expected and what came -- never a bare ``struct``/``flexbuffers`` error. Values MediaPipe's
``Eval`` rejects (non-positive sizes, negative indices) are rejected here too, at load.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

from flatbuffers import flexbuffers

from gpulite.errors import ModelError, brief

__all__ = [
    "DetectionPostProcessOptions",
    "Landmarks2TransformMatrixOptions",
    "TransformLandmarksOptions",
    "TransformTensorBilinearOptions",
    "TransposeConvBiasOptions",
    "decode_detection_postprocess",
    "decode_landmarks_to_transform_matrix",
    "decode_transform_landmarks",
    "decode_transform_tensor_bilinear",
    "decode_transpose_conv_bias",
]

# TfLitePadding (tensorflow/lite/core/c/builtin_op_data.h); kTfLitePaddingUnknown = 0 is refused.
_TFLITE_PADDING = {1: "SAME", 2: "VALID"}
_TRANSPOSE_CONV_PARAMS = struct.Struct("<3i")
# Bounds on decoding a FlexBuffer (MediaPipe's options are a few dozen values in < 1 KB).
_FLEX_MAX_BYTES = 1 << 16
_FLEX_MAX_VALUES = 1 << 14
_FLEX_MAX_DEPTH = 32


@dataclass(frozen=True)
class TransposeConvBiasOptions:
    """``TfLiteTransposeConvParams`` of ``Convolution2DTransposeBias``.

    Attributes
    ----------
    padding : {"SAME", "VALID"}
    stride_w, stride_h : int
        Strides, both >= 1.
    """

    padding: str
    stride_w: int
    stride_h: int


@dataclass(frozen=True)
class Landmarks2TransformMatrixOptions:
    """Options of ``Landmarks2TransformMatrix`` version 2 (``LandmarksToTransformMatrixV2Attributes``).

    Attributes
    ----------
    subset_idxs : tuple of int
        Landmarks whose rotated bounding box sets the crop's centre and size.
    left_rotation_idx, right_rotation_idx : int
        The two landmarks whose direction sets the crop's rotation.
    target_rotation_radians : float
        The rotation that line should have after the transform (0 when absent, as the
        C++ reader's ``AsFloat`` of a missing key).
    output_height, output_width : int
        Size of the crop the matrix maps to (the downstream sampler's output).
    scale_x, scale_y : float
        Crop size relative to the landmarks' bounding box.
    """

    subset_idxs: tuple[int, ...]
    left_rotation_idx: int
    right_rotation_idx: int
    target_rotation_radians: float
    output_height: int
    output_width: int
    scale_x: float
    scale_y: float


@dataclass(frozen=True)
class TransformTensorBilinearOptions:
    """Options of ``TransformTensorBilinear`` version 2: the sampled output's height and width."""

    output_height: int
    output_width: int


@dataclass(frozen=True)
class TransformLandmarksOptions:
    """``TransformLandmarks`` version 2 has no options; this marks that they were checked."""


def _op_error(op: str, msg: str) -> ModelError:
    return ModelError(f"{op} custom options: {msg}")


def _flex_map(data: bytes | None, op: str) -> dict[str, Any]:
    """The FlexBuffer map in ``data``, fully decoded; any decoding failure is a ModelError.

    Decoding is bounded: at most ``_FLEX_MAX_BYTES`` of input, ``_FLEX_MAX_VALUES`` decoded values
    (a FlexBuffer may point at one vector from many places, so a small blob can stand for an
    exponentially large value) and ``_FLEX_MAX_DEPTH`` levels of nesting.
    """
    if not data:
        raise _op_error(op, "expected a FlexBuffer map, got no custom options")
    if len(data) > _FLEX_MAX_BYTES:
        raise _op_error(op, f"expected a FlexBuffer map of at most {_FLEX_MAX_BYTES} bytes, got {len(data)} bytes")
    budget = [_FLEX_MAX_VALUES]

    def spend(n: int) -> None:
        budget[0] -= n
        if budget[0] < 0:
            raise _op_error(op, f"expected a FlexBuffer map of at most {_FLEX_MAX_VALUES} values, got more from "
                                f"{len(data)} bytes (shared references expand it)")

    def value(ref: flexbuffers.Ref, depth: int) -> Any:
        spend(1)
        if depth > _FLEX_MAX_DEPTH:
            raise _op_error(op, f"expected a FlexBuffer nested at most {_FLEX_MAX_DEPTH} levels deep, got deeper")
        if ref.IsMap:
            m = ref.AsMap
            spend(len(m))
            return {value(k, depth + 1): value(v, depth + 1) for k, v in zip(m.Keys, m.Values, strict=True)}
        if ref.IsVector:
            vec = ref.AsVector
            spend(len(vec))
            return [value(e, depth + 1) for e in vec]
        if ref.IsTypedVector or ref.IsFixedTypedVector:
            typed = ref.AsTypedVector if ref.IsTypedVector else ref.AsFixedTypedVector
            spend(len(typed))
            return typed.Value
        return ref.Value  # a scalar, string, key or blob: a bounded slice of the buffer

    try:
        result = value(flexbuffers.GetRoot(bytes(data)), 0)
    except ModelError:
        raise
    # The flexbuffers reader signals bad input with whatever its internals hit (struct.error,
    # IndexError, TypeError, ValueError, UnicodeDecodeError, ...), so everything is turned into
    # one ModelError here.
    except Exception as e:
        raise _op_error(op, f"expected a FlexBuffer map, got {len(data)} bytes that do not decode "
                            f"({type(e).__name__}: {brief(str(e))})") from None
    if not isinstance(result, dict):
        raise _op_error(op, f"expected a FlexBuffer map, got a {type(result).__name__}")
    return result


def _int(m: dict[str, Any], key: str, op: str, *, minimum: int | None = None) -> int:
    if key not in m:
        raise _op_error(op, f"expected key {key!r} (an int), got keys {brief(sorted(m))}")
    v = m[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise _op_error(op, f"expected {key!r} to be an int, got {type(v).__name__} {brief(v)}")
    if minimum is not None and v < minimum:
        raise _op_error(op, f"expected {key!r} >= {minimum}, got {v}")
    if not -(1 << 31) <= v < (1 << 31):  # the C++ reader keeps int32
        raise _op_error(op, f"expected {key!r} to fit in int32, got {v}")
    return v


def _float(m: dict[str, Any], key: str, op: str, *, default: float | None = None,
           positive: bool = False) -> float:
    if key not in m:
        if default is not None:
            return default
        raise _op_error(op, f"expected key {key!r} (a float), got keys {brief(sorted(m))}")
    v = m[key]
    # The C++ reader's AsFloat converts ints too, so an int-typed value is accepted.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _op_error(op, f"expected {key!r} to be a float, got {type(v).__name__} {brief(v)}")
    f = float(v)
    if not math.isfinite(f):
        raise _op_error(op, f"expected {key!r} to be finite, got {f}")
    if positive and f <= 0:
        raise _op_error(op, f"expected {key!r} > 0, got {f}")
    return f


def _int_vector(m: dict[str, Any], key: str, op: str) -> tuple[int, ...]:
    if key not in m:
        raise _op_error(op, f"expected key {key!r} (a vector of ints), got keys {brief(sorted(m))}")
    v = m[key]
    if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise _op_error(op, f"expected {key!r} to be a vector of ints, got {brief(v)}")
    if not v:
        raise _op_error(op, f"expected {key!r} to hold at least one index, got an empty vector")
    bad = [i for i in v if not 0 <= i < (1 << 31)]
    if bad:
        raise _op_error(op, f"expected {key!r} to hold non-negative int32 indices, got {bad[:5]}")
    return tuple(v)


def decode_transpose_conv_bias(data: bytes | None) -> TransposeConvBiasOptions:
    """Decode ``Convolution2DTransposeBias`` options (a raw ``TfLiteTransposeConvParams``).

    Parameters
    ----------
    data : bytes or None
        The operator's custom options. Bytes after the first 12 (fields newer
        ``TfLiteTransposeConvParams`` versions append) are ignored, as MediaPipe reads
        only padding and strides.

    Returns
    -------
    TransposeConvBiasOptions

    Raises
    ------
    ModelError
        Fewer than 12 bytes, a padding other than 1 (SAME) or 2 (VALID), or a stride < 1.
    """
    op = "Convolution2DTransposeBias"
    data = data or b""
    n = len(data)
    if n < _TRANSPOSE_CONV_PARAMS.size:
        raise _op_error(op, f"expected a {_TRANSPOSE_CONV_PARAMS.size}-byte TfLiteTransposeConvParams "
                            f"(int32 padding, stride_width, stride_height), got {n} bytes")
    padding, stride_w, stride_h = _TRANSPOSE_CONV_PARAMS.unpack_from(bytes(data[:12]))
    if padding not in _TFLITE_PADDING:
        raise _op_error(op, f"expected padding 1 (SAME) or 2 (VALID) (TfLitePadding), got {padding}")
    if stride_w < 1 or stride_h < 1:
        raise _op_error(op, f"expected strides >= 1, got stride_width={stride_w}, stride_height={stride_h}")
    return TransposeConvBiasOptions(_TFLITE_PADDING[padding], stride_w, stride_h)


def decode_landmarks_to_transform_matrix(data: bytes | None) -> Landmarks2TransformMatrixOptions:
    """Decode ``Landmarks2TransformMatrix`` version-2 options (a FlexBuffer map).

    Parameters
    ----------
    data : bytes or None
        The operator's custom options.

    Returns
    -------
    Landmarks2TransformMatrixOptions

    Raises
    ------
    ModelError
        Not a FlexBuffer map, a key missing or of the wrong type, or a value MediaPipe's
        ``Eval`` rejects (negative index, output size or scale not positive, empty subset).
    """
    op = "Landmarks2TransformMatrix"
    m = _flex_map(data, op)
    return Landmarks2TransformMatrixOptions(
        subset_idxs=_int_vector(m, "subset_idxs", op),
        left_rotation_idx=_int(m, "left_rotation_idx", op, minimum=0),
        right_rotation_idx=_int(m, "right_rotation_idx", op, minimum=0),
        target_rotation_radians=_float(m, "target_rotation_radians", op, default=0.0),
        output_height=_int(m, "output_height", op, minimum=1),
        output_width=_int(m, "output_width", op, minimum=1),
        scale_x=_float(m, "scale_x", op, positive=True),
        scale_y=_float(m, "scale_y", op, positive=True),
    )


def decode_transform_tensor_bilinear(data: bytes | None) -> TransformTensorBilinearOptions:
    """Decode ``TransformTensorBilinear`` version-2 options (FlexBuffer map of the output size).

    Raises
    ------
    ModelError
        Not a FlexBuffer map, or ``output_height``/``output_width`` missing, not ints or < 1.
    """
    op = "TransformTensorBilinear"
    m = _flex_map(data, op)
    return TransformTensorBilinearOptions(
        output_height=_int(m, "output_height", op, minimum=1),
        output_width=_int(m, "output_width", op, minimum=1),
    )


def decode_transform_landmarks(data: bytes | None) -> TransformLandmarksOptions:
    """Check ``TransformLandmarks`` version-2 options: there are none to decode.

    MediaPipe's version-2 parser ignores the bytes entirely, so anything given is accepted.
    """
    return TransformLandmarksOptions()


@dataclass(frozen=True)
class DetectionPostProcessOptions:
    """Options of ``TFLite_Detection_PostProcess`` (the keys its ``Init`` reads).

    Attributes
    ----------
    max_detections : int
        Boxes kept after non-max suppression (>= 0).
    max_classes_per_detection : int
        Fast NMS: classes reported per kept box.
    detections_per_class : int
        Regular NMS: boxes kept per class before the merge (100 when absent, as in LiteRT).
    use_regular_nms : bool
        Per-class NMS (True) or one NMS over each box's best class (False, the default).
    nms_score_threshold, nms_iou_threshold : float
        Scores below the first are dropped; a box overlapping a kept one by more than the
        second (in (0, 1]) is suppressed.
    num_classes : int
        Classes without the background class (the score tensor may hold one more, first).
    y_scale, x_scale, h_scale, w_scale : float
        Box-coder scales dividing the encoded centre and log-size.
    """

    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    use_regular_nms: bool
    nms_score_threshold: float
    nms_iou_threshold: float
    num_classes: int
    y_scale: float
    x_scale: float
    h_scale: float
    w_scale: float


def decode_detection_postprocess(data: bytes | None) -> DetectionPostProcessOptions:
    """Decode ``TFLite_Detection_PostProcess`` options (a FlexBuffer map).

    ``detections_per_class`` (100) and ``use_regular_nms`` (False) may be absent, as LiteRT's
    ``Init`` defaults them; every other key the converter writes is required.

    Raises
    ------
    ModelError
        Not a FlexBuffer map, a key missing or of the wrong type, or a value LiteRT's ``Eval``
        rejects: ``max_detections`` < 0 (< 1 for regular NMS), ``num_classes`` < 1, an IoU threshold outside (0, 1],
        ``max_classes_per_detection`` < 1 for fast NMS, ``detections_per_class`` < 1 for
        regular NMS, or a box-coder scale that is not positive.
    """
    op = "TFLite_Detection_PostProcess"
    m = _flex_map(data, op)
    regular = m.get("use_regular_nms", False)
    if not isinstance(regular, (bool, int)):
        raise _op_error(op, f"expected 'use_regular_nms' to be a bool, got {type(regular).__name__} {brief(regular)}")
    regular = bool(regular)
    iou = _float(m, "nms_iou_threshold", op)
    if not 0.0 < iou <= 1.0:
        raise _op_error(op, f"expected 'nms_iou_threshold' in (0, 1], got {iou}")
    return DetectionPostProcessOptions(
        max_detections=_int(m, "max_detections", op, minimum=1 if regular else 0),
        max_classes_per_detection=_int(m, "max_classes_per_detection", op, minimum=0 if regular else 1),
        detections_per_class=_int(m, "detections_per_class", op, minimum=1 if regular else None)
        if "detections_per_class" in m else 100,
        use_regular_nms=regular,
        nms_score_threshold=_float(m, "nms_score_threshold", op),
        nms_iou_threshold=iou,
        num_classes=_int(m, "num_classes", op, minimum=1),
        **{k: _float(m, k, op, positive=True) for k in ("y_scale", "x_scale", "h_scale", "w_scale")},
    )
