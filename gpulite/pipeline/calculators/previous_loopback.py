"""PreviousLoopback: at each frame, the value a back edge carried for the previous frame.

MediaPipe's ``PreviousLoopbackCalculator``, the heart of tracking: ``MAIN`` gets the frames,
``LOOP`` (a back edge) gets something computed late in the graph (e.g. the face regions the
landmarks give), and ``PREV_LOOP`` emits, at frame T, what ``LOOP`` carried at the frame
before T. At the first frame, or when ``LOOP`` had nothing for the previous frame, nothing is
emitted and only the bound moves, so downstream joins go on.

The framework closes a node once its forward inputs are done, back edges aside: when the
graph's input closes while frames are still in flight (the end of ``gpulite graph run``),
those last frames get no ``PREV_LOOP`` and go through the detector instead of being
tracked. Frame-by-frame use (the solutions: ``Graph.wait_for`` after each frame) is not
affected.

Usage (the face-mesh graph)::

    - calculator: PreviousLoopback
      input_stream: ["MAIN:image", "LOOP:face_rects_from_landmarks"]
      input_stream_info: {LOOP: {back_edge: true}}
      output_stream: "PREV_LOOP:prev_face_rects_from_landmarks"
"""

from __future__ import annotations

from collections import deque
from typing import Any

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.registry import register_calculator


@register_calculator
class PreviousLoopback(Calculator):
    """Frame T -> the ``LOOP`` value of the frame before T; see the module docstring."""

    inputs = {"MAIN": Any, "LOOP": Any}
    outputs = {"PREV_LOOP": Any}
    input_policy = "immediate"
    timestamp_offset = None

    def open(self, cc) -> None:
        self.pending: deque[int] = deque()       # frame timestamps waiting for their previous frame's LOOP
        self.prev_main: int | None = None        # the frame before pending[0]
        self.loop: dict[int, Any] = {}           # LOOP payloads by timestamp, not yet used

    def process(self, cc) -> None:
        if cc.packets["MAIN"] is not None:
            self.pending.append(cc.packets["MAIN"].timestamp)
        if cc.packets["LOOP"] is not None:
            self.loop[cc.packets["LOOP"].timestamp] = cc.packets["LOOP"].payload
        loop_bound = cc.input_bound("LOOP")
        while self.pending:
            ts, prev = self.pending[0], self.prev_main
            if prev is not None and prev not in self.loop and loop_bound <= prev:
                return                              # the previous frame's LOOP value may still come
            self.pending.popleft()
            if prev is not None and prev in self.loop:
                cc.output("PREV_LOOP", self.loop[prev], timestamp=ts)
            else:
                cc.set_next_timestamp_bound("PREV_LOOP", ts + 1)
            for k in [k for k in self.loop if k <= prev] if prev is not None else []:
                del self.loop[k]
            self.prev_main = ts
