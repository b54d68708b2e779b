"""LandmarkProjection: landmarks relative to a model input -> relative to the image.

MediaPipe's ``LandmarkLetterboxRemovalCalculator`` + ``LandmarkProjectionCalculator`` in one
step, through ``ImageToTensor``'s ``MATRIX`` (which already holds the letterbox and the rotated
region): x and y go through the transform, z is scaled like x.

Usage::

    - calculator: LandmarkProjection
      input_stream: ["NORM_LANDMARKS:refined_landmarks", "MATRIX:transform"]
      output_stream: "NORM_LANDMARKS:landmarks"
"""

from __future__ import annotations

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.tensors_to_landmarks import project_landmarks
from gpulite.pipeline.calculators.types import ImageTransform, LandmarkList, PipelineValueError
from gpulite.pipeline.registry import register_calculator


@register_calculator
class LandmarkProjection(Calculator):
    """Landmarks on a tensor + its transform -> landmarks on the image; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList, "MATRIX": ImageTransform}
    outputs = {"NORM_LANDMARKS": LandmarkList}

    def process(self, cc) -> None:
        lms, transform = cc.inputs["NORM_LANDMARKS"], cc.inputs["MATRIX"]
        if lms is None:
            return
        if transform is None:
            raise PipelineValueError(f"node {cc.node_name!r}: landmarks at timestamp {cc.timestamp} came without a "
                                     "MATRIX at the same timestamp")
        cc.output("NORM_LANDMARKS", project_landmarks(lms, transform))
