"""TensorsToClassification: a classifier's scores -> the top classes (MediaPipe's calculator).

With ``binary_classification`` the single score s gives class 0 with s and class 1 with
1 - s (the hand model's handedness: "Left"/"Right" as seen in a *mirrored* image, MediaPipe's
convention). Classes are sorted by score, highest first, and the first ``top_k`` kept
(0 keeps all).

Usage (handedness)::

    - calculator: TensorsToClassification
      input_stream: "TENSORS:handedness_tensors"
      output_stream: "CLASSIFICATIONS:handedness"
      options: {binary_classification: true, labels: [Left, Right], top_k: 1}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import PipelineValueError, host_array
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class Classification:
    """One class: index, score and label (MediaPipe ``Classification``)."""

    index: int
    score: float
    label: str = ""


@dataclass(frozen=True)
class TensorsToClassificationOptions:
    """MediaPipe's ``TensorsToClassificationCalculatorOptions`` (labels inline instead of a file)."""

    top_k: int = 0
    binary_classification: bool = False
    labels: tuple[str, ...] = ()
    tensor_index: int = 0


def classify(scores: np.ndarray, options: TensorsToClassificationOptions) -> tuple[Classification, ...]:
    """The classes of one score tensor, best first (see the module docstring)."""
    s = np.asarray(scores, np.float32).reshape(-1)
    o = options
    if o.binary_classification:
        if s.size != 1:
            raise PipelineValueError(f"TensorsToClassification: binary classification needs 1 score, got {s.size}")
        values = [float(s[0]), float(np.float32(1.0 - float(s[0])))]
    else:
        values = [float(v) for v in s]
    if o.labels and len(o.labels) != len(values):
        raise PipelineValueError(f"TensorsToClassification: {len(o.labels)} labels for {len(values)} classes")
    classes = [Classification(i, v, o.labels[i] if o.labels else "") for i, v in enumerate(values)]
    classes.sort(key=lambda c: -c.score)
    return tuple(classes[:o.top_k] if o.top_k > 0 else classes)


@register_calculator
class TensorsToClassification(Calculator):
    """Score tensor -> tuple of :class:`Classification`; see the module docstring."""

    inputs = {"TENSORS": list}
    outputs = {"CLASSIFICATIONS": tuple}
    options = TensorsToClassificationOptions

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        cc.output("CLASSIFICATIONS", classify(host_array(tensors[cc.options.tensor_index]), cc.options))
