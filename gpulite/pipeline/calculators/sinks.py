"""Sink calculators: a video file (PyAV, else OpenCV), numbered image files, a Python callback.

Usage::

    - calculator: VideoWriterSink
      input_stream: "IMAGE:output_image"
      options: {path: out.mp4, fps: 30}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.sources import SourceUnavailableError, pyav
from gpulite.pipeline.calculators.types import PipelineValueError
from gpulite.pipeline.registry import register_calculator

_CODECS = ("libx264", "h264", "mpeg4")  # tried in order for .mp4/.mov/.mkv when codec is ""
# Without PyAV: OpenCV's FourCC per suffix (MPEG-4 Part 2 in the opencv wheel's FFmpeg; it has no H.264 encoder)
_FOURCC = {".avi": "MJPG", ".webm": "VP80"}
_FOURCC_DEFAULT = "mp4v"


class VideoWriter:
    """Writes RGB uint8 frames to a video file; the size is taken from the first frame (cropped to even).

    Through PyAV when it is installed (H.264 where its FFmpeg has an encoder for it), else
    through OpenCV's ``cv2.VideoWriter`` (MPEG-4 Part 2 ``mp4v``; ``.avi`` Motion JPEG,
    ``.webm`` VP8), which plays everywhere but is larger at the same quality.

    Parameters
    ----------
    path : str or Path
    fps : float
    codec : str
        An FFmpeg encoder name (PyAV) or a four-character code (OpenCV); ``""`` picks one
        (PyAV: the first available of libx264, h264, mpeg4).
    """

    def __init__(self, path: str | Path, fps: float = 30.0, codec: str = "") -> None:
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self._av = pyav()
        self.path, self.fps = Path(path), fps
        if self._av is not None:
            self.codec = codec or self._default_codec(self._av)
        elif codec and len(codec) != 4:
            raise SourceUnavailableError(f"video codec {codec!r} needs PyAV (pip install 'gpulite[video]'); "
                                         "without it, give an OpenCV four-character code such as 'mp4v'")
        else:
            self.codec = codec or _FOURCC.get(self.path.suffix.lower(), _FOURCC_DEFAULT)
        self.container: Any = None
        self.stream: Any = None
        self.size = (0, 0)
        self.frames = 0

    @staticmethod
    def _default_codec(av: Any) -> str:
        for name in _CODECS:
            try:
                av.codec.Codec(name, "w")
                return name
            except Exception:  # not built into this FFmpeg
                continue
        raise SourceUnavailableError(f"none of the encoders {_CODECS} is available in this PyAV build")

    def _open(self, w: int, h: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.size = (w - w % 2, h - h % 2)  # yuv420p needs even sizes
        if self._av is None:
            from gpulite.pipeline.calculators._opencv import cv2

            self.container = cv2.VideoWriter(str(self.path), cv2.VideoWriter_fourcc(*self.codec), self.fps, self.size)
            if not self.container.isOpened():
                self.container = None
                raise SourceUnavailableError(f"OpenCV cannot write {str(self.path)!r} with codec {self.codec!r}")
            return
        self.container = self._av.open(str(self.path), mode="w")
        rate = Fraction(self.fps).limit_denominator(1001)
        self.stream = self.container.add_stream(self.codec, rate=rate)
        self.stream.width, self.stream.height = self.size
        self.stream.pix_fmt = "yuv420p"

    def write(self, frame: np.ndarray) -> None:
        if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] < 3 or frame.dtype != np.uint8:
            raise PipelineValueError(f"VideoWriter: expected an RGB uint8 frame, got {getattr(frame, 'shape', frame)}")
        if self.container is None:
            self._open(frame.shape[1], frame.shape[0])
        w, h = self.size
        rgb = np.ascontiguousarray(frame[:h, :w, :3])
        if self.stream is None:  # OpenCV
            self.container.write(np.ascontiguousarray(rgb[..., ::-1]))
        else:
            vf = self._av.VideoFrame.from_ndarray(rgb, format="rgb24")
            for packet in self.stream.encode(vf):
                self.container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        if self.container is None:
            return
        if self.stream is None:
            self.container.release()
        else:
            for packet in self.stream.encode():
                self.container.mux(packet)
            self.container.close()
        self.container = None

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class VideoWriterSinkOptions:
    path: str = ""
    fps: float = 30.0
    codec: str = ""


@register_calculator
class VideoWriterSink(Calculator):
    """Every ``IMAGE`` packet becomes a frame of a video file (see :class:`VideoWriter`)."""

    inputs = {"IMAGE": np.ndarray}
    options = VideoWriterSinkOptions

    def open(self, cc) -> None:
        if not cc.options.path:
            raise PipelineValueError(f"node {cc.node_name!r}: set the 'path' option")
        self.writer = VideoWriter(cc.options.path, cc.options.fps, cc.options.codec)

    def process(self, cc) -> None:
        if cc.inputs["IMAGE"] is not None:
            self.writer.write(cc.inputs["IMAGE"])

    def close(self, cc) -> None:
        writer = getattr(self, "writer", None)
        if writer is not None:
            writer.close()


@dataclass(frozen=True)
class ImageWriterSinkOptions:
    """``pattern`` is formatted with ``index`` (0, 1, ...) and ``timestamp``."""

    folder: str = "."
    pattern: str = "frame_{index:06d}.png"


@register_calculator
class ImageWriterSink(Calculator):
    """Every ``IMAGE`` packet becomes an image file (Pillow; the format follows the suffix).

    Usage::

        - calculator: ImageWriterSink
          input_stream: "IMAGE:output_image"
          options: {folder: out/, pattern: "frame_{index:06d}.png"}
    """

    inputs = {"IMAGE": np.ndarray}
    options = ImageWriterSinkOptions

    def open(self, cc) -> None:
        self.folder = Path(cc.options.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.index = 0

    def process(self, cc) -> None:
        from PIL import Image

        image = cc.inputs["IMAGE"]
        if image is None:
            return
        name = cc.options.pattern.format(index=self.index, timestamp=cc.timestamp)
        Image.fromarray(np.ascontiguousarray(image)).save(self.folder / name)
        self.index += 1


@register_calculator
class CallbackSink(Calculator):
    """Calls the ``CALLBACK`` side input as ``callback(timestamp, payload)`` for every ``IN`` packet.

    Usage::

        - calculator: CallbackSink
          input_stream: "IN:detections"
          input_side_packet: "CALLBACK:on_detections"
    """

    inputs = {"IN": Any}
    side_inputs = {"CALLBACK": Callable}

    def open(self, cc) -> None:
        if not callable(cc.side_inputs["CALLBACK"]):
            raise PipelineValueError(f"node {cc.node_name!r}: CALLBACK must be callable")

    def process(self, cc) -> None:
        if cc.inputs["IN"] is not None:
            cc.side_inputs["CALLBACK"](cc.timestamp, cc.inputs["IN"])
