"""ImageToTensor: cut a (rotated) region out of an image, resize it, letterbox it and normalise it.

MediaPipe's ``ImageToTensorCalculator`` with its OpenCV converter, the one its CPU graphs
(and so the Python solutions) run: the region of interest is a rotated rect (the whole image
by default); with ``keep_aspect_ratio`` it is first grown to the tensor's aspect ratio
(``PadRoi``), so the image ends up letterboxed, with the border mode filling what lies
outside the image. Tensor pixel (x, y) reads the image at pixel coordinates ``A @ (x, y, 1)``,
the rect's corners mapping to the tensor's pixel-grid corners (0, 0) and (W, H); values are
scaled from [0, 255] to ``output_range``.

On the CPU this is MediaPipe's own call sequence in OpenCV (:func:`opencv_projection`,
:func:`warp_to_tensor`): corners from ``cv2.boxPoints`` of the float32 region,
``cv2.getPerspectiveTransform``, ``cv2.warpPerspective`` on uint8 (bilinear at 1/32-pixel
positions, rounded to whole grey levels), then the value transform. OpenCV 4.10 and 4.11 give
the same bytes as the OpenCV 3.4 that mediapipe 0.10.14 links (4.14 and 5.x do not: hence the
pin in pyproject.toml). The webgpu shader interpolates in float32 (MediaPipe's GPU converter
does too, a difference of at most half a grey level) unless ``match_opencv: true``, with which
it reproduces the OpenCV sampling; landmark models are sensitive to that half grey level, and
trackers compound it: the hand, pose and selfie graphs set it.

Usage::

    - calculator: ImageToTensor
      input_stream: ["IMAGE:image", "NORM_RECT:roi"]        # NORM_RECT is optional
      output_stream: ["TENSORS:input_tensors", "MATRIX:transform"]
      input_side_packet: "BACKEND:backend"                   # optional: "cpu" | "webgpu" | "auto"
      options: {output_width: 128, output_height: 128, keep_aspect_ratio: true,
                output_range: [-1.0, 1.0], border_mode: zero}

``TENSORS`` is a one-element list: a float32 (1, H, W, 3) numpy array on the CPU, or on
webgpu a GPU tensor (``.buffer``, ``.offset``, ``.shape``, ``data_sync()``) written by a
compute shader, which ``Inference`` binds as its input without a copy through the host.
``MATRIX`` is an :class:`~gpulite.pipeline.calculators.types.ImageTransform`.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._opencv import MAX_SIDE, cv2
from gpulite.pipeline.calculators._select import check_backend, requested_backend, select_backend
from gpulite.pipeline.calculators.types import ImageTransform, NormalizedRect, PipelineValueError
from gpulite.pipeline.gpu_image import GpuImage
from gpulite.pipeline.registry import register_calculator

BORDER_MODES = ("zero", "replicate")
_CV_BORDERS = {"zero": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE}


@dataclass(frozen=True)
class ImageToTensorOptions:
    """Options of :class:`ImageToTensor` (MediaPipe's ``ImageToTensorCalculatorOptions``).

    ``output_range`` is MediaPipe's ``output_tensor_float_range`` (min, max); ``border_mode``
    ``"zero"`` fills outside the image with black (which becomes ``output_range[0]``),
    ``"replicate"`` repeats the edge pixels (MediaPipe's default). ``match_opencv`` makes the
    webgpu shader sample as OpenCV does; the CPU path always is OpenCV.
    """

    output_width: int = 128
    output_height: int = 128
    keep_aspect_ratio: bool = False
    output_range: tuple[float, float] = (-1.0, 1.0)
    border_mode: str = "replicate"
    backend: str = "auto"
    match_opencv: bool = False

    def __post_init__(self) -> None:
        if self.output_width < 1 or self.output_height < 1:
            raise ValueError(f"output size must be positive, got {self.output_width}x{self.output_height}")
        if len(self.output_range) != 2 or not self.output_range[0] < self.output_range[1]:
            raise ValueError(f"output_range must be (min, max) with min < max, got {self.output_range!r}")
        if self.border_mode not in BORDER_MODES:
            raise ValueError(f"border_mode must be one of {BORDER_MODES}, got {self.border_mode!r}")
        check_backend(self.backend, "ImageToTensorOptions")

    @property
    def value_transform(self) -> tuple[float, float]:
        """(scale, offset) taking [0, 255] to ``output_range``."""
        lo, hi = self.output_range
        return (hi - lo) / 255.0, lo


@dataclass(frozen=True)
class Roi:
    """A rotated rect in image pixels (centre, size, rotation in radians, clockwise)."""

    cx: float
    cy: float
    width: float
    height: float
    rotation: float = 0.0


def image_roi(rect: NormalizedRect | None, width: int, height: int) -> Roi:
    """The region in pixels: ``rect`` scaled by the image size, or the whole image."""
    if rect is None:
        return Roi(0.5 * width, 0.5 * height, float(width), float(height))
    if rect.width <= 0 or rect.height <= 0:
        raise PipelineValueError(f"ImageToTensor: the region must have a positive size, got {rect}")
    return Roi(rect.x_center * width, rect.y_center * height, rect.width * width, rect.height * height, rect.rotation)


def pad_roi(roi: Roi, out_w: int, out_h: int, keep_aspect_ratio: bool) -> tuple[Roi, tuple[float, float, float, float]]:
    """Grow ``roi`` to the tensor's aspect ratio (MediaPipe ``PadRoi``); returns it and the padding.

    The padding is (left, top, right, bottom) as fractions of the tensor.
    """
    if not keep_aspect_ratio:
        return roi, (0.0, 0.0, 0.0, 0.0)
    tensor_aspect = out_h / out_w
    roi_aspect = roi.height / roi.width
    if tensor_aspect > roi_aspect:
        new_w, new_h = roi.width, roi.width * tensor_aspect
        h_pad, v_pad = 0.0, (1.0 - roi_aspect / tensor_aspect) / 2.0
    else:
        new_w, new_h = roi.height / tensor_aspect, roi.height
        h_pad, v_pad = (1.0 - tensor_aspect / roi_aspect) / 2.0, 0.0
    return Roi(roi.cx, roi.cy, new_w, new_h, roi.rotation), (h_pad, v_pad, h_pad, v_pad)


def sampling_matrix(roi: Roi, out_w: int, out_h: int) -> np.ndarray:
    """2x3 affine taking tensor pixel (x, y) to image pixel coordinates (OpenCV's convention)."""
    c, s = math.cos(roi.rotation), math.sin(roi.rotation)
    sx, sy = roi.width / out_w, roi.height / out_h
    # src = centre + R @ ((x, y) * scale - size / 2)
    return np.array([
        [c * sx, -s * sy, roi.cx - c * roi.width / 2 + s * roi.height / 2],
        [s * sx, c * sy, roi.cy - s * roi.width / 2 - c * roi.height / 2],
    ], np.float64)


def opencv_projection(image_size: tuple[int, int], rect: NormalizedRect | None, out_w: int, out_h: int, *,
                      keep_aspect_ratio: bool) -> np.ndarray:
    """The 3x3 projection taking image pixels to tensor pixels, as MediaPipe's OpenCV converter makes it.

    ``GetRoi`` and ``PadRoi`` in float32, the region's corners from ``cv2.boxPoints``, sent to
    the tensor's corners by ``cv2.getPerspectiveTransform`` (float64): the matrix MediaPipe
    hands to ``warpPerspective``, which inverts it and samples at 1/32-pixel positions.
    """
    f = np.float32
    w, h = f(image_size[0]), f(image_size[1])
    if rect is None:
        cx, cy, rw, rh, rot = f(0.5) * w, f(0.5) * h, w, h, f(0.0)
    else:
        if rect.width <= 0 or rect.height <= 0:
            raise PipelineValueError(f"ImageToTensor: the region must have a positive size, got {rect}")
        cx, cy = f(rect.x_center) * w, f(rect.y_center) * h
        rw, rh, rot = f(rect.width) * w, f(rect.height) * h, f(rect.rotation)
    if keep_aspect_ratio:
        tensor_aspect = f(out_h) / f(out_w)
        if tensor_aspect > rh / rw:
            rh = rw * tensor_aspect
        else:
            rw = rh / tensor_aspect
    degrees = float(rot * f(180.0)) / math.pi  # roi.rotation * 180.f / M_PI
    corners = cv2.boxPoints(((float(cx), float(cy)), (float(rw), float(rh)), degrees))
    tensor_corners = np.array([(0, out_h), (0, 0), (out_w, 0), (out_w, out_h)], np.float32)
    return cv2.getPerspectiveTransform(corners, tensor_corners)


def plan_transform(image_size: tuple[int, int], rect: NormalizedRect | None,
                   options: ImageToTensorOptions) -> tuple[np.ndarray, ImageTransform]:
    """The sampling matrix (pixels) and the :class:`ImageTransform` (relative) for one image size.

    With ``match_opencv`` the sampling matrix is the inverse of :func:`opencv_projection`
    (its float32 corners), else :func:`sampling_matrix` of the float64 region.
    """
    w, h = image_size
    ow, oh = options.output_width, options.output_height
    roi, padding = pad_roi(image_roi(rect, w, h), ow, oh, options.keep_aspect_ratio)
    if options.match_opencv:
        inv = np.linalg.inv(opencv_projection(image_size, rect, ow, oh, keep_aspect_ratio=options.keep_aspect_ratio))
        a = inv[:2] / inv[2, 2]  # the perspective row is (0, 0, 1) up to rounding
    else:
        a = sampling_matrix(roi, ow, oh)
    m = np.diag([1.0 / w, 1.0 / h, 1.0]) @ np.vstack([a, [0.0, 0.0, 1.0]]) @ np.diag([ow, oh, 1.0])
    return a, ImageTransform(matrix=m, padding=padding, image_size=(w, h), tensor_size=(ow, oh))


INTER_BITS = 5  # OpenCV's sub-pixel precision of warps: 1/32 pixel
MAPS_KEPT = 8  # projections whose remap tables are kept (full-frame inputs repeat theirs every frame)
_maps: OrderedDict[tuple[bytes, int, int], tuple[np.ndarray, np.ndarray] | None] = OrderedDict()
_maps_lock = threading.Lock()


def perspective_maps(projection: np.ndarray, out_w: int, out_h: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The fixed-point tables ``cv2.warpPerspective`` computes for ``projection`` (bilinear):
    per output pixel the source pixel (int16 x, y) and the 1/32-pixel fraction's table index,
    from the inverted matrix in double precision, rounded half to even, as OpenCV 4.10/4.11 do,
    so ``cv2.remap`` with them gives warpPerspective's bytes. None for a singular matrix."""
    ok, inv = cv2.invert(np.asarray(projection, np.float64), flags=cv2.DECOMP_LU)
    if not ok:
        return None
    tab = 1 << INTER_BITS
    # OpenCV goes in blocks of bw columns: per row and block X0 = M0*xb + M1*y + M2, then per
    # pixel (X0 + M0*x1) * W with x = xb + x1; the same sums in the same order give its ties
    bw = min(1024 // min(16, out_h), out_w)
    cols = np.arange(out_w)
    xb, x1 = (cols // bw * bw).astype(np.float64)[None, :], (cols % bw).astype(np.float64)[None, :]
    y = np.arange(out_h, dtype=np.float64)[:, None]
    m = inv.reshape(-1)
    w = (m[6] * xb + m[7] * y + m[8]) + m[6] * x1
    w = np.where(w != 0, tab / np.where(w != 0, w, 1.0), 0.0)
    lim = float(np.iinfo(np.int32).max)
    xs = np.rint(np.clip(((m[0] * xb + m[1] * y + m[2]) + m[0] * x1) * w, -lim, lim)).astype(np.int64)
    ys = np.rint(np.clip(((m[3] * xb + m[4] * y + m[5]) + m[3] * x1) * w, -lim, lim)).astype(np.int64)
    xy = np.stack([np.clip(xs >> INTER_BITS, -32768, 32767), np.clip(ys >> INTER_BITS, -32768, 32767)], -1)
    frac = (ys & (tab - 1)) * tab + (xs & (tab - 1))
    return xy.astype(np.int16), frac.astype(np.uint16)


def _cached_maps(projection: np.ndarray, out_w: int, out_h: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The remap tables of a projection seen before (built on its second use), else None: a
    region that moves every frame (tracking) would pay for tables it uses once."""
    key = (np.asarray(projection, np.float64).tobytes(), out_w, out_h)
    with _maps_lock:
        if key not in _maps:
            _maps[key] = None
            while len(_maps) > MAPS_KEPT:
                _maps.popitem(last=False)
            return None
        _maps.move_to_end(key)
        maps = _maps[key]
    if maps is None:
        maps = perspective_maps(projection, out_w, out_h)
        with _maps_lock:
            if key in _maps:
                _maps[key] = maps
    return maps


def warp_to_tensor(image: np.ndarray, projection: np.ndarray, out_w: int, out_h: int, border: str,
                   scale: float, offset: float) -> np.ndarray:
    """``cv2.warpPerspective`` (bilinear, uint8) of an RGB/RGBA image, then ``value * scale + offset``.

    ``projection`` takes image pixels to tensor pixels (:func:`opencv_projection`); the result
    is float32 (1, out_h, out_w, 3), alpha dropped. A projection used again (a full-frame
    input: every frame the same) is warped by ``cv2.remap`` with its tables kept
    (:func:`perspective_maps`), the same bytes at less than half the cost.
    """
    maps = _cached_maps(projection, out_w, out_h)
    if maps is not None:
        warped = cv2.remap(image, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=_CV_BORDERS[border])
    else:
        warped = cv2.warpPerspective(image, projection, (out_w, out_h), flags=cv2.INTER_LINEAR,
                                     borderMode=_CV_BORDERS[border])
    # what MediaPipe's convertTo computes, in float32: float32(value) * scale, then + offset;
    # the multiply converts as it goes (one pass, no float copy first)
    tensor = np.multiply(warped[None, :, :, :3], np.float32(scale), dtype=np.float32)
    if offset != 0.0 or scale < 0.0:  # adding 0.0 changes nothing but a -0.0
        tensor += np.float32(offset)
    return tensor


def check_image(image: Any) -> tuple[int, int]:
    """(width, height) of an RGB/RGBA uint8 image or a :class:`GpuImage`; raises on anything else."""
    if isinstance(image, GpuImage):
        if image.format not in ("rgb8", "rgba8", "rgba8unorm"):
            raise PipelineValueError(f"ImageToTensor: GpuImage format {image.format!r} is not supported; "
                                     "expected 'rgb8', 'rgba8' (buffers) or 'rgba8unorm' (texture)")
        return image.width, image.height
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] not in (3, 4) \
            or image.dtype != np.uint8:
        what = (f"{type(image).__name__} {getattr(image, 'dtype', '')} {getattr(image, 'shape', '')}").strip()
        raise PipelineValueError(f"ImageToTensor: expected an RGB or RGBA uint8 image (H, W, 3|4), got {what}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise PipelineValueError(f"ImageToTensor: empty image {image.shape}")
    if max(image.shape[:2]) > MAX_SIDE:
        raise PipelineValueError(f"ImageToTensor: image {image.shape[1]}x{image.shape[0]} is too large; OpenCV's "
                                 f"warp takes sides up to {MAX_SIDE} pixels: downscale it first")
    return image.shape[1], image.shape[0]


def image_to_tensor(image: np.ndarray, rect: NormalizedRect | None = None, *,
                    options: ImageToTensorOptions = ImageToTensorOptions()) -> tuple[np.ndarray, ImageTransform]:
    """The CPU conversion as a function: (float32 (1, H, W, 3) tensor, transform)."""
    size = check_image(image)
    if isinstance(image, GpuImage):
        raise PipelineValueError("image_to_tensor (cpu) needs a numpy image; GpuImages go through the webgpu path")
    o = options
    _, transform = plan_transform(size, rect, o)
    projection = opencv_projection(size, rect, o.output_width, o.output_height, keep_aspect_ratio=o.keep_aspect_ratio)
    tensor = warp_to_tensor(image, projection, o.output_width, o.output_height, o.border_mode, *o.value_transform)
    return tensor, transform


@register_calculator
class ImageToTensor(Calculator):
    """Image (+ optional region) -> model input tensor and its transform; see the module docstring.

    Usage::

        - calculator: ImageToTensor
          input_stream: "IMAGE:image"
          output_stream: ["TENSORS:input_tensors", "MATRIX:transform"]
          options: {output_width: 128, output_height: 128, keep_aspect_ratio: true, border_mode: zero}
    """

    inputs = {"IMAGE": (np.ndarray, GpuImage), "NORM_RECT": NormalizedRect}
    outputs = {"TENSORS": list, "MATRIX": ImageTransform}
    side_inputs = {"BACKEND": str}
    optional_ports = frozenset({"NORM_RECT", "BACKEND"})
    options = ImageToTensorOptions

    def open(self, cc) -> None:
        self.backend = select_backend(requested_backend(cc, cc.options.backend), cc.node_name, "ImageToTensor")
        self._plan: tuple[Any, Any] = (None, None)  # (image size, rect) -> (sampling matrix or projection, transform)
        self._gpu: Any = None
        if self.backend == "webgpu":
            from gpulite.backends.webgpu.pipeline import ImageToTensorGpu
            self._gpu = ImageToTensorGpu()
        self.queues_only = self._gpu is not None  # uploads and queues the warp, reads nothing back

    def _planned(self, size: tuple[int, int], rect: NormalizedRect | None, o: ImageToTensorOptions) -> tuple[Any, Any]:
        """(the GPU's sampling matrix or the CPU's projection, transform) for this size and region, cached."""
        if self._plan[0] != (size, rect):  # a video at a fixed region: planned once
            a, transform = plan_transform(size, rect, o)
            if self._gpu is None:
                a = opencv_projection(size, rect, o.output_width, o.output_height,
                                      keep_aspect_ratio=o.keep_aspect_ratio)
            self._plan = ((size, rect), (a, transform))
        return self._plan[1]

    def process(self, cc) -> None:
        image = cc.inputs["IMAGE"]
        if image is None:
            return
        o: ImageToTensorOptions = cc.options
        rect = cc.inputs.get("NORM_RECT")
        size = check_image(image)
        matrix, transform = self._planned(size, rect, o)
        scale, offset = o.value_transform
        if self._gpu is not None:
            tensor: Any = self._gpu.run(image, matrix, o.output_width, o.output_height, o.border_mode, scale, offset,
                                        match_opencv=o.match_opencv)
        elif isinstance(image, GpuImage):
            raise PipelineValueError(f"node {cc.node_name!r}: a GpuImage input needs backend 'webgpu', "
                                     f"this node runs on {self.backend!r}")
        else:
            tensor = warp_to_tensor(image, matrix, o.output_width, o.output_height, o.border_mode, scale, offset)
        cc.output("TENSORS", [tensor])
        cc.output("MATRIX", transform)
