"""SplitTensors / SplitLandmarks: pick parts of a tensor list or a landmark list (MediaPipe's
``SplitTensorVectorCalculator`` / ``SplitNormalizedLandmarkListCalculator``).

``ranges`` lists ``[begin, end)`` pairs; range i goes to output port ``TAG:i``. A range past the
end of the input raises.

Usage (pose: landmarks, presence flag, segmentation, heatmap of the landmark model)::

    - calculator: SplitTensors
      input_stream: "TENSORS:output_tensors"
      output_stream: ["TENSORS:landmark_tensors", "TENSORS:1:flag_tensor", "TENSORS:2:segmentation_tensor"]
      options: {ranges: [[0, 1], [1, 2], [2, 3]]}

    - calculator: SplitLandmarks
      input_stream: "NORM_LANDMARKS:all_landmarks"
      output_stream: ["NORM_LANDMARKS:landmarks", "NORM_LANDMARKS:1:auxiliary_landmarks"]
      options: {ranges: [[0, 33], [33, 35]]}
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import LandmarkList, PipelineValueError
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class SplitOptions:
    """``ranges``: ``[begin, end)`` index pairs, one per output port index."""

    ranges: tuple[tuple[int, int], ...] = ((0, 1),)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", tuple(tuple(int(v) for v in r) for r in self.ranges))
        for r in self.ranges:
            if len(r) != 2 or not 0 <= r[0] < r[1]:
                raise ValueError(f"each range must be [begin, end) with 0 <= begin < end, got {list(r)}")


def _port(tag: str, i: int) -> str:
    return tag if i == 0 else f"{tag}:{i}"


def _check(n: int, ranges: tuple[tuple[int, int], ...], what: str, node: str) -> None:
    if ranges and max(e for _, e in ranges) > n:
        raise PipelineValueError(f"node {node!r}: {what} has {n} elements, ranges {[list(r) for r in ranges]} "
                                 "reach past the end")


@register_calculator
class SplitTensors(Calculator):
    """A list of tensors -> sublists; see the module docstring."""

    inputs = {"TENSORS": list}
    outputs = {"TENSORS": list}
    options = SplitOptions

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        _check(len(tensors), cc.options.ranges, "the tensor list", cc.node_name)
        for i, (b, e) in enumerate(cc.options.ranges):
            cc.output(_port("TENSORS", i), list(tensors[b:e]))


@register_calculator
class SplitLandmarks(Calculator):
    """A landmark list -> sub-lists; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    options = SplitOptions

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            return
        _check(len(lms), cc.options.ranges, "the landmark list", cc.node_name)
        xyz, vis, pres = lms.columns()  # on arrays: no per-landmark objects made here or downstream
        for i, (b, e) in enumerate(cc.options.ranges):
            cc.output(_port("NORM_LANDMARKS", i), LandmarkList.from_arrays(
                xyz[b:e], None if vis is None else vis[b:e], None if pres is None else pres[b:e]))
