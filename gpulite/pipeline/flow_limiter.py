"""``FlowLimiter``: MediaPipe's FlowLimiterCalculator — drop frames instead of queueing them."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.context import CalculatorContext
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class FlowLimiterOptions:
    """``max_in_flight``: frames allowed between the limiter and its FINISHED signal."""

    max_in_flight: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.max_in_flight, bool) or not isinstance(self.max_in_flight, int) or self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be an int >= 1, got {self.max_in_flight!r}")


@register_calculator
class FlowLimiter(Calculator):
    """Pass a frame on ``IN`` to ``OUT`` only while fewer than ``max_in_flight`` frames are in flight.

    A frame is in flight from the moment it passes until ``FINISHED`` (a back edge from the end
    of the throttled section) has a packet at or after its timestamp, or its bound moves past it
    (so a downstream node that emits nothing for a frame also finishes it). Dropped frames are
    counted (``Graph.stats()[name].dropped``) and the ``OUT`` bound still advances, so joins
    downstream never wait for a dropped frame. ``ALLOW`` (optional) gets ``True``/``False`` per frame.

    Examples
    --------
    >>> b.node("FlowLimiter", inputs={"IN": "image", "FINISHED": "detections"}, back_edges={"FINISHED"},
    ...        outputs={"OUT": "throttled_image"}, options={"max_in_flight": 1})
    """

    inputs = {"IN": Any, "FINISHED": Any}
    outputs = {"OUT": Any, "ALLOW": bool}
    options = FlowLimiterOptions
    input_policy = "immediate"
    queues_only = True  # decides at once, so frames behind it reach the GPU before older ones are read back

    def open(self, cc: CalculatorContext) -> None:
        self.in_flight: deque[int] = deque()

    def process(self, cc: CalculatorContext) -> None:
        finished = cc.packets["FINISHED"]
        done_before = cc.input_bound("FINISHED")
        if finished is not None:
            done_before = max(done_before, finished.timestamp + 1)
        while self.in_flight and self.in_flight[0] < done_before:
            self.in_flight.popleft()
        frame = cc.packets["IN"]
        if frame is None:
            return
        allow = len(self.in_flight) < cc.options.max_in_flight
        if allow:
            self.in_flight.append(frame.timestamp)
            cc.output("OUT", frame.payload)
        else:
            cc.record_drop()
        cc.output("ALLOW", allow)
