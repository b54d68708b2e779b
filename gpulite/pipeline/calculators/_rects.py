"""What the rect-producing calculators share: angle wrapping, the rotation that turns a vector
to a target angle, and the "one item or a list" ports (``DetectionsToRects``,
``AlignmentPointsRects``, ``HandLandmarksToRect``)."""

from __future__ import annotations

import math
from typing import Any

from gpulite.pipeline.calculators.types import PipelineValueError


def normalize_radians(angle: float) -> float:
    """``angle`` wrapped into [-pi, pi)."""
    return angle - 2 * math.pi * math.floor((angle + math.pi) / (2 * math.pi))


def rotation_toward(dx: float, dy: float, target: float) -> float:
    """The rotation (radians, wrapped) that turns the pixel vector ``(dx, dy)`` (y down) to
    point at the angle ``target`` (radians; pi/2 = up), as MediaPipe's rect calculators do."""
    return normalize_radians(target - math.atan2(-dy, dx))


def one_or_many(cc: Any, one: str, many: str) -> list | None:
    """The items of a node with a single-item port ``one`` and a list port ``many``: ``[item]``,
    the list, or None when neither has a packet at this timestamp (``one`` wins)."""
    if cc.inputs.get(one) is not None:
        return [cc.inputs[one]]
    if cc.inputs.get(many) is not None:
        return list(cc.inputs[many])
    return None


def image_size(cc: Any, what: str) -> tuple[int, int]:
    """The node's ``IMAGE_SIZE`` packet (width, height); a clear error naming ``what`` came
    without one."""
    size = cc.inputs["IMAGE_SIZE"]
    if size is None:
        raise PipelineValueError(f"node {cc.node_name!r}: {what} at timestamp {cc.timestamp} came without "
                                 "an IMAGE_SIZE")
    return size


def output_rects(cc: Any, rects: list) -> None:
    """``NORM_RECT`` (the first rect, when there is one) and ``NORM_RECTS`` (all of them)."""
    if rects:
        cc.output("NORM_RECT", rects[0])
    cc.output("NORM_RECTS", rects)
