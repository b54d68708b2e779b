"""``BaseVisionTaskApi``: the running-mode rules every gpulite vision task shares.

A task is made in one :class:`~gpulite.tasks.vision.RunningMode` and takes images only the way
that mode says, with MediaPipe 1.2.2's errors (type and message) for anything else:

- IMAGE: ``detect(image)`` (``segment``, ``classify``, ``embed``), each image on its own.
- VIDEO: ``detect_for_video(image, timestamp_ms)``, frames in order; a task that tracks (the
  landmarkers) carries the previous frame's landmarks to the next.
- LIVE_STREAM: ``detect_async(image, timestamp_ms)`` returns at once; a worker thread runs the
  frames in the order they came and calls ``result_callback(result, output_image, timestamp_ms)``
  once for each, in timestamp order. Unlike MediaPipe, no frame is dropped: when the worker is
  ``LIVE_QUEUE`` frames behind, ``detect_async`` waits for it. An error while running a frame (or
  raised by the callback) is raised again by the next ``detect_async`` or by ``close``.

Errors (:mod:`gpulite.tasks.errors`): a call of another mode's method, or a ``result_callback``
given outside LIVE_STREAM (or missing in it), raises :class:`RunningModeError`; a timestamp not
after the previous one :class:`InputTimestampError` (both ``ValueError``, as in MediaPipe); a
timestamp that is not an int a ``TypeError``; an image that is not a :class:`~gpulite.Image` a
``TypeError``; an image of a format the task cannot take :class:`ImageFormatError`; any call
after ``close()`` :class:`TaskClosedError`.

A task subclasses this and implements ``_run(rgb, timestamp_ms, image_processing_options)``
(``rgb``: the image as (H, W, 3) uint8; ``timestamp_ms`` None in IMAGE mode) and ``_close()``.
"""

from __future__ import annotations

import contextlib
import logging
import numbers
import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from gpulite.tasks.errors import (
    ImageFormatError,
    InputTimestampError,
    RunningModeError,
    TaskClosedError,
    TaskUnimplementedError,
)
from gpulite.tasks.vision.core.image import Image, ImageFormat
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode, validate_running_mode

log = logging.getLogger(__name__)

LIVE_QUEUE = 4  # frames detect_async may be ahead of the worker before it waits
_MODE_WORDS = {VisionTaskRunningMode.IMAGE: "image", VisionTaskRunningMode.VIDEO: "video",
               VisionTaskRunningMode.LIVE_STREAM: "live stream"}
_STOP = object()


class BaseVisionTaskApi:
    """Running mode, timestamps, image checks, the live-stream worker, ``close()``.

    Parameters
    ----------
    running_mode : VisionTaskRunningMode
    result_callback : callable, optional
        LIVE_STREAM only: ``callback(result, output_image, timestamp_ms)``.
    """

    def __init__(self, running_mode: VisionTaskRunningMode,
                 result_callback: Callable[[Any, Image, int], None] | None = None) -> None:
        validate_running_mode(running_mode, result_callback)
        self._running_mode = running_mode
        self._callback = result_callback
        self._last_timestamp: int | None = None
        self._closed = False
        self._run_lock = threading.Lock()  # one frame at a time through the task's graph
        self._queue: queue.Queue[Any] | None = None
        self._worker: threading.Thread | None = None
        self._live_error: BaseException | None = None

    @property
    def running_mode(self) -> VisionTaskRunningMode:
        return self._running_mode

    # -- the three ways in (subclasses name them detect / segment / classify / embed) -------
    def _process_image_data(self, image: Any, image_processing_options: ImageProcessingOptions | None,
                            where: str) -> Any:
        rgb = self._accept(image, VisionTaskRunningMode.IMAGE, None, where)
        with self._run_lock:
            return self._run(rgb, None, image_processing_options)

    def _process_video_data(self, image: Any, timestamp_ms: Any,
                            image_processing_options: ImageProcessingOptions | None, where: str) -> Any:
        rgb = self._accept(image, VisionTaskRunningMode.VIDEO, timestamp_ms, where)
        with self._run_lock:
            return self._run(rgb, int(timestamp_ms), image_processing_options)

    def _send_live_stream_data(self, image: Any, timestamp_ms: Any,
                               image_processing_options: ImageProcessingOptions | None, where: str) -> None:
        self._raise_live_error()
        rgb = self._accept(image, VisionTaskRunningMode.LIVE_STREAM, timestamp_ms, where)
        if self._worker is None:
            self._queue = queue.Queue(maxsize=LIVE_QUEUE)
            self._worker = threading.Thread(target=self._live_loop, name=f"{type(self).__name__}-live", daemon=True)
            self._worker.start()
        assert self._queue is not None
        self._queue.put((image, rgb, int(timestamp_ms), image_processing_options))

    # -- checks ----------------------------------------------------------------------------
    def _accept(self, image: Any, mode: VisionTaskRunningMode, timestamp_ms: Any, where: str) -> np.ndarray:
        """The image as RGB after MediaPipe's checks, in its order: the task is open, the image is
        an Image, the call fits the mode, the timestamp increases, the format is one the task takes."""
        name = f"{type(self).__name__}.{where}"
        if self._closed:
            raise TaskClosedError(f"{name}() after close(): Task runner is currently not running.")
        if not isinstance(image, Image):
            hint = (" (wrap a numpy array: Image(image_format=ImageFormat.SRGB, data=rgb))"
                    if isinstance(image, np.ndarray) else "")
            raise TypeError(f"{name}: expected a gpulite Image (mp.Image), got {type(image).__name__}{hint}")
        if self._running_mode != mode:
            raise RunningModeError(
                f"Task is not initialized with the {_MODE_WORDS[mode]} mode. Current running mode:"
                f"{_MODE_WORDS[self._running_mode]} mode ({name} needs running_mode=RunningMode.{mode.name})")
        if mode != VisionTaskRunningMode.IMAGE:
            if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, numbers.Integral):
                raise TypeError(f"{name}: timestamp_ms must be an int (milliseconds), got "
                                f"{type(timestamp_ms).__name__} {timestamp_ms!r}")
            if self._last_timestamp is not None and timestamp_ms <= self._last_timestamp:
                raise InputTimestampError(f"Input timestamp must be monotonically increasing. ({name}: got "
                                          f"timestamp_ms={int(timestamp_ms)} after {self._last_timestamp})")
        rgb = self._rgb(image, name)
        if mode != VisionTaskRunningMode.IMAGE:
            self._last_timestamp = int(timestamp_ms)
        return rgb

    def _rgb(self, image: Image, name: str) -> np.ndarray:
        """SRGB as it is, SRGBA without its alpha; any other format is refused (MediaPipe's graphs
        fail on them: a RuntimeError for GRAY8, a ValueError for float images)."""
        fmt = image.image_format
        if fmt == ImageFormat.SRGB:
            return image.numpy_view()
        if fmt == ImageFormat.SRGBA:
            return np.ascontiguousarray(image.numpy_view()[..., :3])
        raise ImageFormatError(f"{name}: the image is {ImageFormat(fmt).name}; this task takes SRGB or SRGBA images "
                               "(uint8, 3 or 4 channels)")

    def _check_processing_options(self, options: ImageProcessingOptions | None, *, roi_allowed: bool,
                                  rotation_allowed: bool = True) -> int:
        """The rotation in degrees (0, 90, 180 or 270) of ``options``, checked as MediaPipe does; a task that
        cannot turn images yet passes ``rotation_allowed=False`` and refuses a rotation."""
        if options is None:
            return 0
        if not isinstance(options, ImageProcessingOptions):
            raise TypeError(f"image_processing_options must be an ImageProcessingOptions, got "
                            f"{type(options).__name__}")
        if options.region_of_interest is not None and not roi_allowed:
            raise ValueError("This task doesn't support region-of-interest.")
        if options.rotation_degrees % 90 != 0:
            raise ValueError(f"Expected rotation to be a multiple of 90°, got {options.rotation_degrees}.")
        if options.rotation_degrees % 360 and not rotation_allowed:
            raise TaskUnimplementedError(f"{type(self).__name__}: image_processing_options.rotation_degrees="
                                         f"{options.rotation_degrees} is not supported by gpulite yet; turn the "
                                         "image upright first (np.rot90)")
        return options.rotation_degrees % 360

    # -- live stream -----------------------------------------------------------------------
    def _live_loop(self) -> None:
        assert self._queue is not None
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            image, rgb, ts, ipo = item
            try:
                with self._run_lock:
                    result = self._run(rgb, ts, ipo)
                assert self._callback is not None
                self._callback(result, image, ts)
            except BaseException as e:  # raised again in the caller's thread
                log.debug("%s: live-stream frame %d failed: %s", type(self).__name__, ts, e)
                if self._live_error is None:
                    self._live_error = e

    def _raise_live_error(self) -> None:
        err, self._live_error = self._live_error, None
        if err is not None:
            raise err

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Deliver the live-stream frames still queued, then release the task's graphs and models.

        Safe to call twice. Raises the error of a live-stream frame that failed since the last call.
        """
        if self._closed:
            return
        self._closed = True
        if self._worker is not None and self._queue is not None:
            self._queue.put(_STOP)
            self._worker.join()
        with self._run_lock:
            self._close()
        self._raise_live_error()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if not getattr(self, "_closed", True):
                self.close()

    # -- for subclasses --------------------------------------------------------------------
    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> Any:
        raise NotImplementedError

    def _close(self) -> None:
        """Release graphs and models (default: nothing)."""
