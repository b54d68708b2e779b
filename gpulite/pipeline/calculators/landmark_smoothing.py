"""LandmarksSmoothing and VisibilitySmoothing: MediaPipe's temporal landmark filters (video mode).

- :class:`OneEuroFilter` and :class:`LowPassFilter` follow ``mediapipe/util/filtering``: a
  low-pass filter whose cut-off rises with the (scaled) speed of the value; the first value
  passes unchanged; the sampling frequency comes from the timestamps.
- ``LandmarksSmoothing`` (``LandmarksSmoothingCalculator`` with ``one_euro_filter``): each
  coordinate of each landmark is filtered in pixels (``IMAGE_SIZE``; z scaled like x), the
  speed divided by the object's scale: the mean of the ``OBJECT_SCALE_ROI`` rect's width and
  height in pixels when connected, else of the landmarks' bounding box. A frame without
  landmarks resets the filters (connect ``IMAGE_SIZE`` so the node sees every frame). With
  ``world_landmarks: true`` the landmarks are world landmarks (metres, MediaPipe's
  ``LANDMARKS`` tag): filtered as they are, not in pixels (``IMAGE_SIZE`` then only makes the
  node see every frame).
- ``VisibilitySmoothing`` (``low_pass_filter``): visibility through a low-pass filter of
  constant ``alpha``.

Timestamps: ``seconds_per_tick`` turns a packet's timestamp into seconds. The default,
0.033333 s, reads timestamps as frame counts (0, 1, 2, ...) at 30 frames/s; graphs stamped in
microseconds, as MediaPipe's are (``pose.yaml``: gpulite's solutions stamp frames with the
caller's ``timestamp_ms``, or 33333 us apart as MediaPipe's Python solutions do), set 1.0e-6.

The ``ENABLE`` side input (bool, optional) turns a node into a pass-through, as MediaPipe's
``SwitchContainer`` with ``smooth_landmarks`` does.

Usage (pose landmarks)::

    - calculator: VisibilitySmoothing
      input_stream: ["NORM_LANDMARKS:landmarks", "IMAGE_SIZE:image_size"]
      output_stream: "NORM_LANDMARKS:visibility_filtered"
      input_side_packet: "ENABLE:smooth_landmarks"
      options: {alpha: 0.1}
    - calculator: LandmarksSmoothing
      input_stream: ["NORM_LANDMARKS:visibility_filtered", "IMAGE_SIZE:image_size", "OBJECT_SCALE_ROI:scale_roi"]
      output_stream: "NORM_LANDMARKS:filtered_landmarks"
      input_side_packet: "ENABLE:smooth_landmarks"
      options: {min_cutoff: 0.05, beta: 80.0, derivate_cutoff: 1.0}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import LandmarkList, NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator

_F32 = np.float32


def _r32(value):
    """``value`` (a float or a float64 array) rounded to float32, as float64: MediaPipe's float state."""
    return np.float64(np.float32(value))


class LowPassFilter:
    """Exponential smoothing; the first value passes (MediaPipe ``LowPassFilter``, float32 state).

    Values are floats, or float64 arrays holding one filter per element (same arithmetic).
    """

    def __init__(self, alpha: float) -> None:
        self.alpha: Any = float(alpha)
        self.initialized = False
        self.raw: Any = 0.0
        self.stored: Any = 0.0

    def apply(self, value: Any, alpha: Any = None) -> Any:
        if alpha is not None:  # MediaPipe keeps the old alpha when the new one is out of range
            if np.ndim(alpha) == 0:
                self.alpha = _r32(alpha) if 0.0 <= alpha <= 1.0 else self.alpha
            else:
                self.alpha = np.where((alpha >= 0.0) & (alpha <= 1.0), _r32(alpha), self.alpha)
        if self.initialized:
            result = _r32(self.alpha * value + (1.0 - self.alpha) * self.stored)
        else:
            result, self.initialized = _r32(value), True
        self.raw, self.stored = _r32(value), result
        return result


class OneEuroFilter:
    """MediaPipe's ``OneEuroFilter``: ``apply(t_seconds, value_scale, value)``; values as in :class:`LowPassFilter`."""

    def __init__(self, frequency: float, min_cutoff: float, beta: float, derivate_cutoff: float) -> None:
        self.frequency, self.min_cutoff, self.beta, self.derivate_cutoff = frequency, min_cutoff, beta, derivate_cutoff
        self.x = LowPassFilter(self._alpha(min_cutoff))
        self.dx = LowPassFilter(self._alpha(derivate_cutoff))
        self.last_time: float | None = None

    def _alpha(self, cutoff: Any) -> Any:
        te = 1.0 / self.frequency
        tau = 1.0 / (2 * math.pi * cutoff)
        return 1.0 / (1.0 + tau / te)

    def apply(self, t: float, value_scale: float, value: Any) -> Any:
        # As mediapipe 0.10.14's: a time not after the last one passes the value through and
        # leaves the filter as it was; the frequency is measured only between two non-zero
        # times, so after a first frame at time 0 the second still uses the constructed one.
        if self.last_time is not None:
            if t <= self.last_time:
                return value
            if self.last_time != 0 and t != 0:
                self.frequency = 1.0 / (t - self.last_time)
        self.last_time = t
        dvalue = (value - self.x.raw) * value_scale * self.frequency if self.x.initialized else 0.0
        edvalue = self.dx.apply(dvalue, self._alpha(self.derivate_cutoff))
        cutoff = self.min_cutoff + self.beta * abs(edvalue)
        return self.x.apply(value, self._alpha(cutoff))


@dataclass(frozen=True)
class LandmarksSmoothingOptions:
    """MediaPipe's ``OneEuroFilter`` options plus the timestamp unit (see the module docstring)."""

    frequency: float = 30.0
    min_cutoff: float = 1.0
    beta: float = 0.0
    derivate_cutoff: float = 1.0
    min_allowed_object_scale: float = 1e-6
    disable_value_scaling: bool = False
    seconds_per_tick: float = 0.033333
    world_landmarks: bool = False

    def __post_init__(self) -> None:
        for name in ("frequency", "min_cutoff", "derivate_cutoff", "seconds_per_tick"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


def _enabled(cc) -> bool:
    return bool(cc.side_inputs.get("ENABLE", True))


class LandmarkFilters:
    """A :class:`OneEuroFilter` over every landmark coordinate (one array); ``apply`` works in pixels."""

    def __init__(self, options: LandmarksSmoothingOptions) -> None:
        self.o = options
        self.filter: OneEuroFilter | None = None
        self.count = 0

    def reset(self) -> None:
        self.filter = None

    def apply(self, lms: LandmarkList, t: float, image_size: tuple[int, int],
              scale_roi: NormalizedRect | None) -> LandmarkList:
        o = self.o
        w, h = image_size
        if self.filter is None:
            self.filter, self.count = OneEuroFilter(o.frequency, o.min_cutoff, o.beta, o.derivate_cutoff), len(lms)
        elif self.count != len(lms):
            raise PipelineValueError(f"LandmarksSmoothing: {len(lms)} landmarks after {self.count}")
        xyz, vis, pres = lms.columns()
        whw = np.array([w, h, w], np.float64)
        px = _r32(xyz * whw)
        value_scale = 1.0
        if not o.disable_value_scaling:
            if scale_roi is not None:
                scale = (scale_roi.width * w + scale_roi.height * h) / 2.0
            else:
                lo, hi = px[:, :2].min(axis=0), px[:, :2].max(axis=0)
                scale = (float(hi[0] - lo[0]) + float(hi[1] - lo[1])) / 2.0
            if scale < o.min_allowed_object_scale:
                return lms
            value_scale = 1.0 / float(_F32(scale))
        return LandmarkList.from_arrays(self.filter.apply(t, value_scale, px) / whw, vis, pres)


@register_calculator
class LandmarksSmoothing(Calculator):
    """Landmarks -> one-euro filtered landmarks; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList, "IMAGE_SIZE": tuple, "OBJECT_SCALE_ROI": NormalizedRect}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    side_inputs = {"ENABLE": bool}
    optional_ports = frozenset({"OBJECT_SCALE_ROI", "ENABLE"})
    options = LandmarksSmoothingOptions

    def open(self, cc) -> None:
        self.filters = LandmarkFilters(cc.options)

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            self.filters.reset()
            return
        if not _enabled(cc):
            cc.output("NORM_LANDMARKS", lms)
            return
        size = (1, 1) if cc.options.world_landmarks else cc.inputs["IMAGE_SIZE"]
        if size is None:
            raise PipelineValueError(f"node {cc.node_name!r}: landmarks at timestamp {cc.timestamp} came without "
                                     "an IMAGE_SIZE")
        t = cc.timestamp * cc.options.seconds_per_tick
        cc.output("NORM_LANDMARKS", self.filters.apply(lms, t, size, cc.inputs.get("OBJECT_SCALE_ROI")))


@dataclass(frozen=True)
class VisibilitySmoothingOptions:
    """``alpha`` of MediaPipe's visibility ``low_pass_filter``."""

    alpha: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")


@register_calculator
class VisibilitySmoothing(Calculator):
    """Landmarks -> landmarks with low-pass filtered visibility; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList, "IMAGE_SIZE": tuple}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    side_inputs = {"ENABLE": bool}
    optional_ports = frozenset({"IMAGE_SIZE", "ENABLE"})
    options = VisibilitySmoothingOptions

    def open(self, cc) -> None:
        self.filter: LowPassFilter | None = None
        self.count = 0

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            self.filter = None
            return
        if not _enabled(cc):
            cc.output("NORM_LANDMARKS", lms)
            return
        if self.filter is None:
            self.filter, self.count = LowPassFilter(cc.options.alpha), len(lms)
        elif self.count != len(lms):
            raise PipelineValueError(f"VisibilitySmoothing: {len(lms)} landmarks after {self.count}")
        xyz, vis, pres = lms.columns()
        values = np.array([0.0] * len(lms) if vis is None else [0.0 if v is None else v for v in vis], np.float64)
        cc.output("NORM_LANDMARKS", LandmarkList.from_arrays(xyz, self.filter.apply(values), pres))
