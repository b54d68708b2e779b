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
from dataclasses import dataclass, replace

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import LandmarkList, NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator

_F32 = np.float32


class LowPassFilter:
    """Exponential smoothing; the first value passes (MediaPipe ``LowPassFilter``, float32 state)."""

    def __init__(self, alpha: float) -> None:
        self.alpha = float(alpha)
        self.initialized = False
        self.raw = 0.0
        self.stored = 0.0

    def apply(self, value: float, alpha: float | None = None) -> float:
        if alpha is not None and 0.0 <= alpha <= 1.0:  # MediaPipe keeps the old alpha when out of range
            self.alpha = float(_F32(alpha))
        if self.initialized:
            result = float(_F32(self.alpha * value + (1.0 - self.alpha) * self.stored))
        else:
            result, self.initialized = float(_F32(value)), True
        self.raw, self.stored = float(_F32(value)), result
        return result


class OneEuroFilter:
    """MediaPipe's ``OneEuroFilter``: ``apply(t_seconds, value_scale, value)``."""

    def __init__(self, frequency: float, min_cutoff: float, beta: float, derivate_cutoff: float) -> None:
        self.frequency, self.min_cutoff, self.beta, self.derivate_cutoff = frequency, min_cutoff, beta, derivate_cutoff
        self.x = LowPassFilter(self._alpha(min_cutoff))
        self.dx = LowPassFilter(self._alpha(derivate_cutoff))
        self.last_time: float | None = None

    def _alpha(self, cutoff: float) -> float:
        te = 1.0 / self.frequency
        tau = 1.0 / (2 * math.pi * cutoff)
        return 1.0 / (1.0 + tau / te)

    def apply(self, t: float, value_scale: float, value: float) -> float:
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
    """One :class:`OneEuroFilter` per landmark coordinate; ``apply`` works in pixels."""

    def __init__(self, options: LandmarksSmoothingOptions) -> None:
        self.o = options
        self.filters: list[OneEuroFilter] = []

    def reset(self) -> None:
        self.filters = []

    def apply(self, lms: LandmarkList, t: float, image_size: tuple[int, int],
              scale_roi: NormalizedRect | None) -> LandmarkList:
        o = self.o
        w, h = image_size
        if not self.filters:
            self.filters = [OneEuroFilter(o.frequency, o.min_cutoff, o.beta, o.derivate_cutoff)
                            for _ in range(3 * len(lms))]
        elif len(self.filters) != 3 * len(lms):
            raise PipelineValueError(f"LandmarksSmoothing: {len(lms)} landmarks after {len(self.filters) // 3}")
        px = [(float(_F32(p.x * w)), float(_F32(p.y * h)), float(_F32(p.z * w))) for p in lms.landmarks]
        value_scale = 1.0
        if not o.disable_value_scaling:
            if scale_roi is not None:
                scale = (scale_roi.width * w + scale_roi.height * h) / 2.0
            else:
                xs, ys = [p[0] for p in px], [p[1] for p in px]
                scale = ((max(xs) - min(xs)) + (max(ys) - min(ys))) / 2.0
            if scale < o.min_allowed_object_scale:
                return lms
            value_scale = 1.0 / float(_F32(scale))
        out = []
        for i, (p, (x, y, z)) in enumerate(zip(lms.landmarks, px, strict=True)):
            fx = self.filters[3 * i].apply(t, value_scale, x)
            fy = self.filters[3 * i + 1].apply(t, value_scale, y)
            fz = self.filters[3 * i + 2].apply(t, value_scale, z)
            out.append(replace(p, x=fx / w, y=fy / h, z=fz / w))
        return LandmarkList(tuple(out))


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
        self.filters: list[LowPassFilter] = []

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            self.filters = []
            return
        if not _enabled(cc):
            cc.output("NORM_LANDMARKS", lms)
            return
        if not self.filters:
            self.filters = [LowPassFilter(cc.options.alpha) for _ in range(len(lms))]
        out = tuple(replace(p, visibility=f.apply(p.visibility if p.visibility is not None else 0.0))
                    for p, f in zip(lms.landmarks, self.filters, strict=True))
        cc.output("NORM_LANDMARKS", LandmarkList(out))
