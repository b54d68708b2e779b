"""Source calculators: images, folders, video files (PyAV, else OpenCV), in-memory frames, cameras (OpenCV).

Every source emits RGB uint8 (H, W, 3) frames on ``IMAGE`` and stops at the end. Video and
camera frames are stamped in microseconds (MediaPipe's convention): a video's presentation
time, a camera's time since the first frame. Images, folders and in-memory frames are stamped
0, 1, 2, ... Optional dependencies (``av``) are imported when a node opens, so this
module always imports.

Usage::

    - calculator: VideoFileSource
      output_stream: "IMAGE:image"
      options: {path: input.mp4}
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.errors import GpuliteError
from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import PipelineValueError
from gpulite.pipeline.registry import register_calculator

log = logging.getLogger(__name__)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v")
# Frames without a clock of their own (image folders, frame lists) are stamped k * 33333 us:
# microseconds at 30 frames/s, as video frames and MediaPipe's Python solutions are.
FRAME_INTERVAL_US = 33333


def image_files(folder: str | Path) -> list[Path]:
    """The image files of ``folder`` (by suffix, :data:`IMAGE_SUFFIXES`), in name order."""
    return sorted(f for f in Path(folder).iterdir() if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)


class SourceUnavailableError(GpuliteError, RuntimeError):
    """A source cannot start: missing file, missing optional package, no camera."""


class ImageReadError(SourceUnavailableError, ValueError):
    """An image file exists but cannot be decoded (corrupt, truncated, not an image)."""


class VideoReadError(SourceUnavailableError, ValueError):
    """A video file cannot be read on: its container is corrupt, or none of its frames decodes."""


def load_image(path: str | Path) -> np.ndarray:
    """An image file as RGB uint8 (H, W, 3), upright and scaled to 8 bits.

    The EXIF orientation tag is applied (a phone photo stored sideways comes out as shown),
    and 16-bit grayscale images are scaled to 0..255 (65535 -> 255) instead of clipped.

    Raises
    ------
    SourceUnavailableError
        No such file.
    ImageReadError
        The file is not an image Pillow can decode (the message names the file and why).
    """
    from PIL import Image, ImageOps

    p = Path(path)
    if not p.is_file():
        raise SourceUnavailableError(f"image file {str(p)!r} does not exist")
    try:
        with Image.open(p) as im:
            im = ImageOps.exif_transpose(im)
            if im.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N"):  # 16-bit grayscale (PNG)
                wide = np.clip(np.asarray(im, np.float64), 0, 65535)
                gray = np.round(wide / 257.0).astype(np.uint8)
                return np.repeat(gray[..., None], 3, axis=2)
            return np.asarray(im.convert("RGB"))
    except (OSError, ValueError, SyntaxError) as e:  # Pillow's errors for unknown, corrupt or truncated files
        raise ImageReadError(f"cannot read image {str(p)!r}: {e}") from None


@dataclass(frozen=True)
class VideoInfo:
    """What a video file says about itself (``fps`` 0.0 and ``frames`` 0 when unknown)."""

    width: int
    height: int
    fps: float
    frames: int


def pyav() -> Any:
    """The ``av`` module (PyAV), or None when it is not installed: videos then go through OpenCV."""
    try:
        import av
    except ImportError:
        return None
    return av


def _video_file(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise SourceUnavailableError(f"video file {str(p)!r} does not exist")
    return p


def _open_video(path: str | Path) -> tuple[Any, Any]:
    """(container, first video stream) through PyAV."""
    av = pyav()
    p = _video_file(path)
    try:
        # PyAV < 13 also forwards FFmpeg's log to Python logging (a stray "ERROR libav..." line for a
        # corrupt file); captured here, since the error raised below says what FFmpeg said.
        with av.logging.Capture():
            container = av.open(str(p))
    except Exception as e:  # PyAV raises its own error types per FFmpeg error
        raise SourceUnavailableError(f"cannot open video {str(p)!r}: {e}") from None
    if not container.streams.video:
        container.close()
        raise SourceUnavailableError(f"{str(p)!r} has no video stream")
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    return container, stream


def _open_capture(path: str | Path) -> Any:
    """An opened ``cv2.VideoCapture`` on a file (OpenCV's FFmpeg), for when PyAV is not installed."""
    from gpulite.pipeline.calculators._opencv import cv2

    p = _video_file(path)
    cap = cv2.VideoCapture(str(p), cv2.CAP_FFMPEG)
    if not cap.isOpened():
        cap.release()
        raise SourceUnavailableError(f"cannot open video {str(p)!r} (OpenCV could not read it; "
                                     "PyAV, pip install 'gpulite[video]', says why)")
    return cap


def video_info(path: str | Path) -> VideoInfo:
    """Size, frame rate and frame count (0 when the container does not say) of a video file.

    Through PyAV when it is installed, else OpenCV (whose count may be estimated from the
    duration when the container does not store it).
    """
    if pyav() is None:
        from gpulite.pipeline.calculators._opencv import cv2

        cap = _open_capture(path)
        try:
            return VideoInfo(int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)),
                             max(float(cap.get(cv2.CAP_PROP_FPS)), 0.0), max(int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), 0))
        finally:
            cap.release()
    container, s = _open_video(path)
    try:
        rate = float(s.average_rate) if s.average_rate else 0.0
        return VideoInfo(s.codec_context.width, s.codec_context.height, rate, int(s.frames or 0))
    finally:
        container.close()


class VideoReader:
    """Iterates (timestamp in microseconds, RGB frame) over a video file; timestamps strictly increase.

    Reads through PyAV when it is installed, else through OpenCV's ``cv2.VideoCapture`` (FFmpeg
    inside the opencv wheel). Both give the same frames; the timestamps are the presentation
    times, which OpenCV counts from the stream's first frame and PyAV from the container's
    zero (the same for files whose first frame is at 0, as encoders write them).

    The file is opened at construction (errors raise there); :meth:`close` (or the end of
    the frames, or a ``with`` block) closes it. With PyAV, a packet the decoder rejects (a
    corrupt stretch of the file) is skipped and counted in ``skipped``; the count is logged
    as a warning at :meth:`close` (OpenCV skips such packets silently). A container that
    cannot be demuxed further, or a video none of whose frames decodes, raises
    :class:`VideoReadError`.
    """

    def __init__(self, path: str | Path, max_frames: int = -1) -> None:
        self.path = str(path)
        self.stream: Any = None
        self.skipped = 0
        if pyav() is not None:
            self.container, self.stream = _open_video(path)
            self._frames = self._decode_av()
        else:
            self.container = _open_capture(path)
            self._frames = self._decode_cv()
        self.max_frames, self.count, self.last = max_frames, 0, -1

    def _decode_av(self) -> Iterator[tuple[int | None, np.ndarray]]:
        import av

        packets = self.container.demux(self.stream)
        tb = self.stream.time_base
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                break
            except av.error.FFmpegError as e:
                raise VideoReadError(f"cannot read video {self.path!r} past frame {self.count}: {e}") from None
            try:
                frames = packet.decode()
            except av.error.FFmpegError as e:
                self.skipped += 1
                log.debug("video %r: skipped an undecodable packet at byte %s: %s", self.path, packet.pos, e)
                continue
            for frame in frames:
                ts = round(float(frame.pts * tb) * 1e6) if frame.pts is not None and tb else None
                yield ts, frame.to_ndarray(format="rgb24")
        if self.skipped and not self.count:
            raise VideoReadError(f"cannot read video {self.path!r}: none of its packets decodes "
                                 f"({self.skipped} skipped)")

    def _decode_cv(self) -> Iterator[tuple[int | None, np.ndarray]]:
        from gpulite.pipeline.calculators._opencv import cv2

        while True:
            ok, bgr = self.container.read()
            if not ok:
                break
            ms = self.container.get(cv2.CAP_PROP_POS_MSEC)
            yield (round(ms * 1e3) if ms >= 0 else None), np.ascontiguousarray(bgr[..., ::-1])
        if not self.count:
            raise VideoReadError(f"cannot read video {self.path!r}: none of its frames decodes")

    def __iter__(self) -> VideoReader:
        return self

    def __next__(self) -> tuple[int, np.ndarray]:
        if self.container is None or 0 <= self.max_frames <= self.count:
            self.close()
            raise StopIteration
        try:
            ts, rgb = next(self._frames)
        except StopIteration:
            self.close()
            raise
        self.last = ts = max(self.last + 1 if ts is None else ts, self.last + 1)  # some containers repeat or omit pts
        self.count += 1
        return ts, rgb

    def close(self) -> None:
        if self.container is not None:
            if self.stream is None:
                self.container.release()
            else:
                self.container.close()
            self.container = None
            if self.skipped:
                log.warning("video %r: skipped %d undecodable packet(s); %d frames read", self.path, self.skipped,
                            self.count)

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ImageFileSourceOptions:
    path: str = ""


@register_calculator
class ImageFileSource(Calculator):
    """One image file, emitted once at timestamp 0.

    Usage::

        - calculator: ImageFileSource
          output_stream: "IMAGE:image"
          options: {path: photo.png}
    """

    outputs = {"IMAGE": np.ndarray}
    options = ImageFileSourceOptions

    def process(self, cc) -> None:
        cc.output("IMAGE", load_image(cc.options.path), timestamp=0)
        cc.stop()


@dataclass(frozen=True)
class ImageFolderSourceOptions:
    """Every image (by suffix) in ``folder``, in name order."""

    folder: str = ""


@register_calculator
class ImageFolderSource(Calculator):
    """The images of a folder, in name order, stamped 0, 1, 2, ...

    Usage::

        - calculator: ImageFolderSource
          output_stream: "IMAGE:image"
          options: {folder: frames/}
    """

    outputs = {"IMAGE": np.ndarray}
    options = ImageFolderSourceOptions

    def open(self, cc) -> None:
        folder = Path(cc.options.folder)
        if not folder.is_dir():
            raise SourceUnavailableError(f"image folder {str(folder)!r} does not exist")
        self.files = image_files(folder)
        self.next = 0

    def process(self, cc) -> None:
        if self.next >= len(self.files):
            cc.stop()
            return
        cc.output("IMAGE", load_image(self.files[self.next]), timestamp=self.next * FRAME_INTERVAL_US)
        self.next += 1


class _ReaderSource(Calculator):
    """Emits the ``(timestamp, frame)`` items of ``self.frames``, a reader that :meth:`open`
    sets (:class:`VideoReader`, :class:`CameraReader`), stops at its end and closes it."""

    def process(self, cc) -> None:
        item = next(self.frames, None)
        if item is None:
            cc.stop()
            return
        cc.output("IMAGE", item[1], timestamp=item[0])

    def close(self, cc) -> None:
        frames = getattr(self, "frames", None)
        if frames is not None:
            frames.close()


@dataclass(frozen=True)
class VideoFileSourceOptions:
    """``max_frames``: stop after that many frames (-1: all)."""

    path: str = ""
    max_frames: int = -1


@register_calculator
class VideoFileSource(_ReaderSource):
    """The frames of a video file (PyAV, else OpenCV), stamped with their presentation time in microseconds.

    Usage::

        - calculator: VideoFileSource
          output_stream: "IMAGE:image"
          options: {path: input.mp4}
    """

    outputs = {"IMAGE": np.ndarray}
    options = VideoFileSourceOptions

    def open(self, cc) -> None:
        self.frames = VideoReader(cc.options.path, cc.options.max_frames)


@register_calculator
class FrameSource(Calculator):
    """Frames from memory: the ``FRAMES`` side input (any iterable of RGB arrays), stamped 0, 1, 2, ...

    Usage::

        - calculator: FrameSource
          input_side_packet: "FRAMES:frames"
          output_stream: "IMAGE:image"
    """

    outputs = {"IMAGE": np.ndarray}
    side_inputs = {"FRAMES": Any}

    def open(self, cc) -> None:
        self.frames = iter(cc.side_inputs["FRAMES"])
        self.next = 0

    def process(self, cc) -> None:
        frame = next(self.frames, None)
        if frame is None:
            cc.stop()
            return
        if not isinstance(frame, np.ndarray):
            raise PipelineValueError(f"node {cc.node_name!r}: frame {self.next} is a {type(frame).__name__}, "
                                     "expected a numpy array")
        cc.output("IMAGE", frame, timestamp=self.next * FRAME_INTERVAL_US)
        self.next += 1


@dataclass(frozen=True)
class CameraSourceOptions:
    """``device``: OpenCV camera index; ``width``/``height``: requested size (0: the camera's)."""

    device: int = 0
    width: int = 0
    height: int = 0
    max_frames: int = -1


def open_camera(device: int = 0, width: int = 0, height: int = 0) -> Any:
    """An opened ``cv2.VideoCapture``; raises :class:`SourceUnavailableError` when there is none."""
    try:
        import cv2
    except ImportError as e:
        raise SourceUnavailableError(f"cameras need OpenCV (pip install opencv-python): {e}") from None
    cap = cv2.VideoCapture(device)
    if not cap.isOpened():
        cap.release()
        raise SourceUnavailableError(f"no camera at OpenCV index {device}")
    if width:
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
    if height:
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
    return cap


class CameraReader:
    """Iterates (microseconds since the first frame, RGB frame) from a camera; see :func:`open_camera`."""

    def __init__(self, device: int = 0, width: int = 0, height: int = 0, max_frames: int = -1) -> None:
        self.cap: Any = open_camera(device, width, height)
        self.max_frames, self.count, self.last = max_frames, 0, -1
        self.start: float | None = None

    def __iter__(self) -> CameraReader:
        return self

    def __next__(self) -> tuple[int, np.ndarray]:
        ok, bgr = (False, None) if self.cap is None or 0 <= self.max_frames <= self.count else self.cap.read()
        if not ok:
            self.close()
            raise StopIteration
        now = time.monotonic()
        self.start = now if self.start is None else self.start
        self.last = ts = max(int((now - self.start) * 1e6), self.last + 1)
        self.count += 1
        return ts, np.ascontiguousarray(bgr[..., ::-1])

    def close(self) -> None:
        if self.cap is not None:
            self.cap.release()
            self.cap = None


@register_calculator
class CameraSource(_ReaderSource):
    """Live frames from a camera through OpenCV, stamped in microseconds since the first frame.

    Raises :class:`SourceUnavailableError` at open when OpenCV or the camera is missing.

    Usage::

        - calculator: CameraSource
          output_stream: "IMAGE:image"
          options: {device: 0, width: 640, height: 480}
    """

    outputs = {"IMAGE": np.ndarray}
    options = CameraSourceOptions

    def open(self, cc) -> None:
        o = cc.options
        self.frames = CameraReader(o.device, o.width, o.height, o.max_frames)
