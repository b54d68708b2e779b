"""``VisionTaskRunningMode`` (``vision.RunningMode``) and its rule on result callbacks."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from gpulite.tasks.errors import RunningModeError


class VisionTaskRunningMode(enum.Enum):
    """How a vision task is fed.

    IMAGE: one image at a time, each on its own (``detect``). VIDEO: the decoded frames of a
    video, in order, each with its timestamp (``detect_for_video``; landmarks are tracked from
    frame to frame). LIVE_STREAM: frames from a camera (``detect_async``), results handed to
    ``result_callback`` on another thread.
    """

    IMAGE = "IMAGE"
    VIDEO = "VIDEO"
    LIVE_STREAM = "LIVE_STREAM"


def validate_running_mode(running_mode: Any, packet_callback: Callable[..., Any] | None) -> None:
    """MediaPipe's rule: a callback in LIVE_STREAM mode and only there.

    Raises
    ------
    RunningModeError
        (a ``ValueError``) the callback is missing in LIVE_STREAM mode or given in another, or
        ``running_mode`` is not a :class:`VisionTaskRunningMode`.
    """
    if not isinstance(running_mode, VisionTaskRunningMode):
        raise RunningModeError(f"running_mode must be a vision.RunningMode (IMAGE, VIDEO or LIVE_STREAM), got "
                               f"{running_mode!r}")
    if running_mode == VisionTaskRunningMode.LIVE_STREAM:
        if packet_callback is None:
            raise RunningModeError("The vision task is in live stream mode, a user-defined result callback must be "
                                   "provided.")
    elif packet_callback:
        raise RunningModeError("The vision task is in image or video mode, a user-defined result callback should "
                               "not be provided.")
    if packet_callback is not None and not callable(packet_callback):
        raise RunningModeError(f"result_callback must be callable (result, output_image, timestamp_ms), got "
                               f"{type(packet_callback).__name__}")
