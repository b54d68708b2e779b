"""ImageToTensor: cut a (rotated) region out of an image, resize it, letterbox it and normalise it.

MediaPipe's ``ImageToTensorCalculator`` with its OpenCV converter, the one its CPU graphs
(and so the Python solutions) run: the region of interest is a rotated rect (the whole image
by default); with ``keep_aspect_ratio`` it is first grown to the tensor's aspect ratio
(``PadRoi``), so the image ends up letterboxed, with the border mode filling what lies
outside the image. Sampling is bilinear with OpenCV's ``warpPerspective`` geometry: tensor
pixel (x, y) reads the image at pixel coordinates ``A @ (x, y, 1)``, the rect's corners
mapping to the tensor's pixel-grid corners (0, 0) and (W, H). Values are scaled from [0, 255]
to ``output_range``. OpenCV rounds the warped image to uint8 before scaling; gpulite keeps the
interpolated value in float32 (the GPU converter of MediaPipe does too), a difference of at
most half a grey level. ``match_opencv: true`` reproduces OpenCV instead, as MediaPipe's CPU
graphs (and so its Python solutions) run it (:mod:`~gpulite.pipeline.calculators.opencv_warp`:
its float32 corner geometry, sample positions rounded to 1/32 pixel, the value rounded to a
whole grey level before the value transform). Landmark models are sensitive to that half grey
level, and trackers compound it: the hand, pose and selfie graphs set it.

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._select import check_backend, requested_backend, select_backend
from gpulite.pipeline.calculators.opencv_warp import opencv_sampling_matrix, quantize_positions
from gpulite.pipeline.calculators.types import ImageTransform, NormalizedRect, PipelineValueError
from gpulite.pipeline.gpu_image import GpuImage
from gpulite.pipeline.registry import register_calculator

BORDER_MODES = ("zero", "replicate")


@dataclass(frozen=True)
class ImageToTensorOptions:
    """Options of :class:`ImageToTensor` (MediaPipe's ``ImageToTensorCalculatorOptions``).

    ``output_range`` is MediaPipe's ``output_tensor_float_range`` (min, max); ``border_mode``
    ``"zero"`` fills outside the image with black (which becomes ``output_range[0]``),
    ``"replicate"`` repeats the edge pixels (MediaPipe's default).
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


def plan_transform(image_size: tuple[int, int], rect: NormalizedRect | None,
                   options: ImageToTensorOptions) -> tuple[np.ndarray, ImageTransform]:
    """The sampling matrix (pixels) and the :class:`ImageTransform` (relative) for one image size."""
    w, h = image_size
    ow, oh = options.output_width, options.output_height
    roi, padding = pad_roi(image_roi(rect, w, h), ow, oh, options.keep_aspect_ratio)
    a = sampling_matrix(roi, ow, oh)
    if options.match_opencv:
        a = opencv_sampling_matrix(image_size, rect, ow, oh, keep_aspect_ratio=options.keep_aspect_ratio)
    m = np.diag([1.0 / w, 1.0 / h, 1.0]) @ np.vstack([a, [0.0, 0.0, 1.0]]) @ np.diag([ow, oh, 1.0])
    return a, ImageTransform(matrix=m, padding=padding, image_size=(w, h), tensor_size=(ow, oh))


class CpuWarp:
    """Bilinear warp in numpy with the gather tables cached for the last geometry.

    For a fixed image size and region (the usual case: a detector on a video) each frame
    costs one byte gather and at most four multiply-adds per output value.
    """

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._idx: np.ndarray | None = None
        self._w: np.ndarray | None = None

    def _tables(self, shape: tuple[int, int, int], a: np.ndarray, out_w: int, out_h: int, border: str,
                scale: float, match_opencv: bool = False) -> None:
        key = (shape, a.tobytes(), out_w, out_h, border, scale, match_opencv)
        if key == self._key:
            return
        h, w, ch = shape
        ys, xs = np.meshgrid(np.arange(out_h, dtype=np.float64), np.arange(out_w, dtype=np.float64), indexing="ij")
        sx = a[0, 0] * xs + a[0, 1] * ys + a[0, 2]
        sy = a[1, 0] * xs + a[1, 1] * ys + a[1, 2]
        if match_opencv:  # OpenCV samples at 1/32-pixel positions
            sx, sy = quantize_positions(sx, sy)
        x0, y0 = np.floor(sx), np.floor(sy)
        fx, fy = sx - x0, sy - y0
        idx, wts = [], []
        for dy, dx, wt in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
            xi, yi = x0 + dx, y0 + dy
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            xi, yi = np.clip(xi, 0, w - 1).astype(np.intp), np.clip(yi, 0, h - 1).astype(np.intp)
            if border == "zero":
                wt = np.where(inside, wt, 0.0)  # a black pixel contributes nothing before the offset
            idx.append((yi * w + xi).ravel())
            wts.append(wt.ravel())
        # Taps whose weight is zero everywhere are dropped: at an integer scale (640x480 -> 128x128
        # samples every 5th pixel exactly) one gather remains, with the same result.
        used = [k for k in range(4) if np.any(wts[k])] or [0]
        flat = np.stack([idx[k] for k in used])                     # (taps, N) pixel indices
        self._idx = (flat[..., None] * ch + np.arange(3)).reshape(len(used), -1)  # RGB bytes; alpha ignored
        # The weights carry the value scale, except for match_opencv, which rounds before scaling
        # (its weights are multiples of 1/1024, so the sum is exact in float32).
        wscale = 1.0 if match_opencv else scale
        self._w = np.repeat((np.stack([wts[k] for k in used]) * wscale).astype(np.float32), 3, axis=1)
        self._key = key

    def __call__(self, image: np.ndarray, a: np.ndarray, out_w: int, out_h: int, border: str,
                 scale: float, offset: float, match_opencv: bool = False) -> np.ndarray:
        """The warped, normalised image as float32 (1, out_h, out_w, 3)."""
        self._tables(image.shape, a, out_w, out_h, border, scale, match_opencv)
        assert self._idx is not None and self._w is not None
        taps = np.ascontiguousarray(image).reshape(-1).take(self._idx)  # (taps, 3N) uint8
        w = self._w
        out = taps[0] * w[0]
        for k in range(1, len(w)):
            out += taps[k] * w[k]
        if match_opencv:  # a whole grey level, as OpenCV's uint8 result, then the value scale
            out = np.floor(out + np.float32(0.5)) * np.float32(scale)
        out += np.float32(offset)
        return out.reshape(1, out_h, out_w, 3)


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
    return image.shape[1], image.shape[0]


def image_to_tensor(image: np.ndarray, rect: NormalizedRect | None = None, *,
                    options: ImageToTensorOptions = ImageToTensorOptions(),
                    warp: CpuWarp | None = None) -> tuple[np.ndarray, ImageTransform]:
    """The CPU conversion as a function: (float32 (1, H, W, 3) tensor, transform)."""
    size = check_image(image)
    if isinstance(image, GpuImage):
        raise PipelineValueError("image_to_tensor (cpu) needs a numpy image; GpuImages go through the webgpu path")
    a, transform = plan_transform(size, rect, options)
    scale, offset = options.value_transform
    tensor = (warp or CpuWarp())(image, a, options.output_width, options.output_height, options.border_mode,
                                 scale, offset, options.match_opencv)
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
        self._cpu = CpuWarp()
        self._plan: tuple[Any, Any] = (None, None)  # (image size, rect) -> (sampling matrix, transform)
        self._gpu: Any = None
        if self.backend == "webgpu":
            from gpulite.backends.webgpu.pipeline import ImageToTensorGpu
            self._gpu = ImageToTensorGpu()

    def process(self, cc) -> None:
        image = cc.inputs["IMAGE"]
        if image is None:
            return
        o: ImageToTensorOptions = cc.options
        rect = cc.inputs.get("NORM_RECT")
        size = check_image(image)
        if self._plan[0] != (size, rect):  # a video at a fixed region: planned once
            self._plan = ((size, rect), plan_transform(size, rect, o))
        a, transform = self._plan[1]
        scale, offset = o.value_transform
        if self._gpu is not None:
            tensor: Any = self._gpu.run(image, a, o.output_width, o.output_height, o.border_mode, scale, offset,
                                        match_opencv=o.match_opencv)
        elif isinstance(image, GpuImage):
            raise PipelineValueError(f"node {cc.node_name!r}: a GpuImage input needs backend 'webgpu', "
                                     f"this node runs on {self.backend!r}")
        else:
            tensor = self._cpu(image, a, o.output_width, o.output_height, o.border_mode, scale, offset, o.match_opencv)
        cc.output("TENSORS", [tensor])
        cc.output("MATRIX", transform)
