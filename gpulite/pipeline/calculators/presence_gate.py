"""PresenceGate: pass a landmark model's tensors on only when its presence score is high enough.

MediaPipe's ``TensorsToFloatsCalculator`` + ``ThresholdingCalculator`` + ``GateCalculator``: the
score is the first value of tensor ``score_index``; the tensors pass when it is *greater* than
``threshold`` (MediaPipe's comparison). The score goes out on ``SCORE`` either way.

Usage (pose: flag tensor 1, the Python solution's ``min_tracking_confidence``)::

    - calculator: PresenceGate
      input_stream: "TENSORS:output_tensors"
      output_stream: ["TENSORS:present_tensors", "SCORE:presence"]
      options: {score_index: 1, threshold: 0.5}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import PipelineValueError, host_array
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class PresenceGateOptions:
    """``score_index``: the tensor holding the score; ``threshold``: passes when score > threshold."""

    score_index: int = 1
    threshold: float = 0.5


def first_value(tensor: object) -> float:
    """The first element of a numpy array or GPU tensor, as a float."""
    a = np.asarray(host_array(tensor)).reshape(-1)
    if a.size == 0:
        raise PipelineValueError("PresenceGate: the score tensor is empty")
    return float(a[0])


@register_calculator
class PresenceGate(Calculator):
    """Tensors -> the same tensors when present; see the module docstring."""

    inputs = {"TENSORS": list}
    outputs = {"TENSORS": list, "SCORE": float}
    options = PresenceGateOptions

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        o: PresenceGateOptions = cc.options
        if not 0 <= o.score_index < len(tensors):
            raise PipelineValueError(f"node {cc.node_name!r}: score_index {o.score_index} out of range for "
                                     f"{len(tensors)} tensors")
        score = first_value(tensors[o.score_index])
        cc.output("SCORE", score)
        if score > o.threshold:
            cc.output("TENSORS", tensors)
