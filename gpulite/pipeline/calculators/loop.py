"""BeginLoop / EndLoop: run part of a graph once per element of a list (MediaPipe's loop calculators).

``BeginLoop`` takes a list at frame timestamp T and emits each element on ``ITEM`` at its own
*loop* timestamp (a counter private to the node, increasing across frames), with the ``CLONE``
inputs repeated alongside each element, and, with the last element, ``BATCH_END`` carrying T.
The nodes between run once per element, on loop timestamps. ``EndLoop`` collects what reaches
its ``ITEM`` input and, on ``BATCH_END``, emits the list at frame timestamp T (an empty list when
nothing came through, so consumers on frame timestamps never wait: MediaPipe's EndLoop emits
nothing then and only moves the bound).

Usage (the face-mesh graph runs the landmark model on each face's region)::

    - calculator: BeginLoop
      input_stream: ["ITERABLE:face_rects", "CLONE:0:image", "CLONE:1:image_size"]
      output_stream: ["ITEM:face_rect", "CLONE:0:loop_image", "CLONE:1:loop_image_size",
                      "BATCH_END:loop_end"]
    # ... nodes on face_rect / loop_image produce "face_landmarks" ...
    - calculator: EndLoop
      input_stream: ["ITEM:face_landmarks", "BATCH_END:loop_end"]
      output_stream: "ITERABLE:multi_face_landmarks"

Every frame must reach ``BeginLoop`` (connect a ``CLONE`` input that has a packet at every
frame, such as the image): a frame it never sees would leave ``EndLoop``'s output waiting.
"""

from __future__ import annotations

from typing import Any

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.registry import register_calculator


@register_calculator
class BeginLoop(Calculator):
    """List at frame timestamp -> one ``ITEM`` per element at loop timestamps; see the module docstring."""

    inputs = {"ITERABLE": list, "CLONE": Any}
    outputs = {"ITEM": Any, "CLONE": Any, "BATCH_END": int}
    optional_ports = frozenset({"CLONE"})
    timestamp_offset = None

    def open(self, cc) -> None:
        self.next_ts = 0
        self.clone_ports = [p for p in cc.inputs if p.partition(":")[0] == "CLONE"]

    def process(self, cc) -> None:
        frame_ts = cc.timestamp
        items = cc.inputs["ITERABLE"] or []
        first = self.next_ts
        for item in items:
            cc.output("ITEM", item, timestamp=self.next_ts)
            for port in self.clone_ports:
                if cc.inputs[port] is not None:
                    cc.output(port, cc.inputs[port], timestamp=self.next_ts)
            self.next_ts += 1
        if self.next_ts == first:      # nothing to loop over: use up one loop timestamp for BATCH_END
            self.next_ts += 1
        cc.output("BATCH_END", frame_ts, timestamp=self.next_ts - 1)
        for port in ("ITEM", *self.clone_ports):
            cc.set_next_timestamp_bound(port, self.next_ts)


@register_calculator
class EndLoop(Calculator):
    """``ITEM`` packets of one batch -> a list at the batch's frame timestamp; see the module docstring."""

    inputs = {"ITEM": Any, "BATCH_END": int}
    outputs = {"ITERABLE": list}
    timestamp_offset = None

    def open(self, cc) -> None:
        self.items: list[Any] = []

    def process(self, cc) -> None:
        if cc.inputs["ITEM"] is not None:
            self.items.append(cc.inputs["ITEM"])
        frame_ts = cc.inputs["BATCH_END"]
        if frame_ts is not None:
            items, self.items = self.items, []
            cc.output("ITERABLE", items, timestamp=frame_ts)
