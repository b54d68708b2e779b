"""Test frames and videos for the solutions: astronaut.png moved, scaled and rotated in a 640x480 frame.

The motion is smooth (a video a tracker can follow): over ``n`` frames the photo turns from
0° to +30°, back through 0° to -30° and back (``max_rotation``), zooms between 0.85x and
1.15x, and drifts up to ±60 px sideways and ±25 px vertically. Frame 0 is the photo
unrotated, centred, scaled to the frame's height on a grey background.

Usage::

    from tests.solutions.video import load_image, make_frames, write_video, read_video

    frames = make_frames(12)                          # list of (480, 640, 3) uint8 RGB
    path = write_video(tmp_path / "astronaut.mp4", frames, fps=10)
    decoded = read_video(path)                        # what a decoder gives back (H.264 is lossy):
                                                      # feed *these* to both gpulite and MediaPipe
    params = frame_params(12)                         # FrameParams(dx, dy, scale, angle) per frame

``make_frames(..., image=other_rgb)`` moves another picture the same way (hands, pose...).

``person_frames(16)`` is a real video instead: one man, his whole body in the frame, starting
jumping jacks (Sports2D's demo video, BSD-3-Clause, fetched through the zoo as
``sports2d_demo``), cropped and scaled to 640x480; ``person_still_frames(24)`` moves one of its
frames (the man with arms and legs spread) as ``make_frames`` moves the astronaut.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.assets import image_path

FRAME_SIZE = (640, 480)          # width, height
BACKGROUND = (90, 90, 90)


@dataclass(frozen=True)
class FrameParams:
    """How frame k places the photo: shift in pixels, scale (1 = frame height), angle in degrees (CCW)."""

    dx: float
    dy: float
    scale: float
    angle: float


def load_image(name: str = "astronaut.png") -> np.ndarray:
    """A shipped test image (tests/data/images) as (H, W, 3) uint8 RGB."""
    import cv2

    path = image_path(name)
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FileNotFoundError(f"no test image {path}")
    return np.ascontiguousarray(bgr[..., ::-1])


def frame_params(n: int, *, max_rotation: float = 30.0) -> list[FrameParams]:
    """The placement of the photo in each of ``n`` frames (see the module docstring)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    out = []
    for k in range(n):
        t = k / max(n - 1, 1)
        out.append(FrameParams(dx=60.0 * math.sin(2 * math.pi * t), dy=25.0 * math.sin(4 * math.pi * t),
                               scale=1.0 + 0.15 * math.sin(3 * math.pi * t),
                               angle=max_rotation * math.sin(2 * math.pi * t)))
    return out


def place(image: np.ndarray, p: FrameParams, size: tuple[int, int] = FRAME_SIZE) -> np.ndarray:
    """``image`` scaled, rotated about its centre and shifted into a ``size`` (w, h) grey frame.

    Pillow's bilinear affine transform, not OpenCV's: the clip must not change with the OpenCV
    release that happens to be installed (4.x and 5.x warps round differently).
    """
    from PIL import Image

    w, h = size
    ih, iw = image.shape[:2]
    s = p.scale * h / max(ih, iw)
    c, si = math.cos(math.radians(p.angle)), math.sin(math.radians(p.angle))
    # frame pixel (x, y) reads the photo at centre + R(angle)^-1 ((x, y) - frame centre - shift) / s
    # (counter-clockwise on screen, as cv2.getRotationMatrix2D)
    tx, ty = w / 2 + p.dx, h / 2 + p.dy
    a, b, d, e = c / s, -si / s, si / s, c / s
    coeffs = (a, b, iw / 2 - a * tx - b * ty, d, e, ih / 2 - d * tx - e * ty)
    out = Image.fromarray(np.ascontiguousarray(image)).transform((w, h), Image.Transform.AFFINE, coeffs,
                                                                  resample=Image.Resampling.BILINEAR,
                                                                  fillcolor=BACKGROUND)
    return np.asarray(out).copy()


def make_frames(n: int = 12, *, image: np.ndarray | None = None, max_rotation: float = 30.0,
                size: tuple[int, int] = FRAME_SIZE) -> list[np.ndarray]:
    """``n`` frames (H, W, 3) uint8 RGB of ``image`` (default astronaut.png) moving smoothly."""
    src = load_image() if image is None else image
    return [place(src, p, size) for p in frame_params(n, max_rotation=max_rotation)]


def write_video(path: str | Path, frames: list[np.ndarray], *, fps: float = 10.0) -> Path:
    """Encode ``frames`` to ``path`` (H.264 where available) with PyAV; returns the path."""
    from gpulite.pipeline.calculators.sinks import VideoWriter

    with VideoWriter(path, fps) as w:
        for f in frames:
            w.write(f)
    return Path(path)


def read_video(path: str | Path) -> list[np.ndarray]:
    """Every decoded frame of a video as (H, W, 3) uint8 RGB."""
    from gpulite.pipeline.calculators.sources import VideoReader

    with VideoReader(path) as r:
        return [f for _, f in r]


# The man on the box in the first seconds of sports2d_demo (1768x994, 30 frames/s, VP9): an
# 800x600 window (x0, y0) that holds his whole body throughout, scaled to FRAME_SIZE.
PERSON_WINDOW = (240, 0, 800, 600)


def person_frames(n: int = 16, *, step: int = 1) -> list[np.ndarray]:
    """``n`` frames (480, 640, 3) uint8 RGB: every ``step``-th frame of sports2d_demo from the first.

    The same pixels on any machine: VP9 decoding is bit-exact, and the BT.709 (limited range)
    YUV to RGB conversion and the crop are numpy's here, not the decoder's (whose rounding differs
    between FFmpeg builds); the scaling is Pillow's, as in :func:`place`.
    """
    import av
    from PIL import Image

    from gpulite import zoo

    x0, y0, w, h = PERSON_WINDOW
    out: list[np.ndarray] = []
    with av.open(str(zoo.resolve("sports2d_demo"))) as container:
        for i, frame in enumerate(container.decode(video=0)):
            if len(out) == n:
                break
            if i % step:
                continue
            if frame.format.name != "yuv420p":
                raise ValueError(f"sports2d_demo frame {i} is {frame.format.name}, expected yuv420p")
            y, u, v = (np.frombuffer(p, np.uint8).reshape(p.height, p.line_size) for p in frame.planes)
            u, v = (c[y0 // 2:(y0 + h) // 2, x0 // 2:(x0 + w) // 2].repeat(2, 0).repeat(2, 1) for c in (u, v))
            rgb = Image.fromarray(_bt709_rgb(y[y0:y0 + h, x0:x0 + w], u, v))
            out.append(np.asarray(rgb.resize(FRAME_SIZE, Image.Resampling.BILINEAR)))
    if len(out) < n:
        raise ValueError(f"sports2d_demo has {len(out)} frames {step} apart, {n} asked for")
    return out


PERSON_STILL = 30  # the frame of sports2d_demo that person_still_frames moves


def person_still_frames(n: int = 24) -> list[np.ndarray]:
    """``n`` frames of sports2d_demo's frame :data:`PERSON_STILL` (as :func:`person_frames` gives it) moving
    as :func:`make_frames` moves the astronaut."""
    return make_frames(n, image=person_frames(PERSON_STILL + 1)[PERSON_STILL])


def _bt709_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Limited-range BT.709 Y'CbCr planes (uint8, one size) as (H, W, 3) uint8 RGB."""
    luma = (y.astype(np.float64) - 16.0) * (255.0 / 219.0)
    cb, cr = ((c.astype(np.float64) - 128.0) * (255.0 / 224.0) for c in (u, v))
    rgb = np.stack([luma + 1.5748 * cr, luma - 0.187324 * cb - 0.468124 * cr, luma + 1.8556 * cb], axis=-1)
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)

