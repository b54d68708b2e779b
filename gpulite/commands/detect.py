"""``gpulite detect``: run a solution over an image, a folder of images or a video.

::

    gpulite detect face photo.jpg                       # prints a summary table
    gpulite detect mesh clip.mp4 -o annotated.mp4        # video in, annotated video out (tracking on)
    gpulite detect pose photos/ -o out/ --backend cpu    # a folder in, a folder of PNGs out
    gpulite detect hands photo.jpg --json                # one JSON object per frame on stdout

TASK is ``face`` (FaceDetector), ``mesh`` (FaceMesh), ``hands``, ``pose`` or ``segment``
(SelfieSegmentation). Videos (read with PyAV) are processed as videos (tracking between
frames); images and folders image by image (``static_image_mode``). ``-o`` writes the frames
with the results drawn on them: a PNG for an image, a folder of PNGs for a folder, a video
for a video. A progress bar goes to stderr and a summary table (frames, how many had
something, per-stage milliseconds, frames/s) to stdout; with ``--json`` stdout carries one
JSON line per frame instead and the table goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
# task -> (solution class name in gpulite.solutions, what one "hit" is, result fields that hold the hits)
TASKS = {
    "face": ("FaceDetector", "faces", ("detections",)),
    "mesh": ("FaceMesh", "faces", ("multi_face_landmarks",)),
    "hands": ("Hands", "hands", ("multi_hand_landmarks",)),
    "pose": ("Pose", "people", ("pose_landmarks",)),
    "segment": ("SelfieSegmentation", "masks", ("segmentation_mask",)),
}


class DetectError(Exception):
    """A ``gpulite detect`` problem the user can fix (bad input path, missing solution...)."""


@dataclass
class DetectSummary:
    """What one ``gpulite detect`` run did (timings in milliseconds, summed over frames)."""

    task: str
    backend: str = ""
    frames: int = 0
    frames_with_hits: int = 0
    hits: int = 0
    seconds: float = 0.0
    first_frame_ms: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)
    timed_frames: int = 0
    output: Path | None = None

    def lines(self) -> list[str]:
        """The closing summary table."""
        what = TASKS[self.task][1]
        n = max(self.timed_frames, 1)
        fps = self.frames / self.seconds if self.seconds > 0 else 0.0
        rows = [f"{'task':<24}{self.task} ({TASKS[self.task][0]}) on {self.backend}",
                f"{'frames':<24}{self.frames}",
                f"{'frames with ' + what:<24}{self.frames_with_hits}",
                f"{what + ' found':<24}{self.hits}",
                f"{'time':<24}{self.seconds:.2f} s, {fps:.1f} frames/s (first frame {self.first_frame_ms:.0f} ms)"]
        if self.stage_ms:
            after = " (after the first frame)" if self.frames > 1 else ""
            rows.append(f"{'stage':<24}{'ms/frame':>10}{after}")
            rows.extend(f"  {k:<22}{v / n:>10.2f}" for k, v in self.stage_ms.items()
                        if k != "total" and v / n >= 0.01)
            rows.append(f"  {'total':<22}{self.stage_ms.get('total', 0.0) / n:>10.2f}")
        if self.output is not None:
            rows.append(f"{'wrote':<24}{self.output}")
        width = max(len(r) for r in rows)
        return ["-" * width, *rows, "-" * width]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``gpulite detect`` on the CLI's subparsers."""
    p = sub.add_parser("detect", help="run a solution (face, mesh, hands, pose, segment) on images or a video")
    p.add_argument("task", choices=sorted(TASKS), help="what to find")
    p.add_argument("input", help="an image, a folder of images, or a video file")
    p.add_argument("-o", "--output", help="annotated output: PNG (image), folder (folder), video (video)")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "webgpu"))
    p.add_argument("--json", action="store_true", help="one JSON line per frame on stdout (table to stderr)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def solution_class(task: str) -> Any:
    """The solution class for ``task``, imported now; DetectError when it is not available."""
    name = TASKS[task][0]
    import gpulite.solutions as solutions

    try:
        return getattr(solutions, name)
    except (ImportError, AttributeError) as e:
        raise DetectError(f"gpulite detect {task}: the {name} solution is not available in this gpulite "
                          f"({e})") from None


def open_frames(spec: str) -> tuple[str, Iterator[tuple[str, np.ndarray]], int, float]:
    """(kind, frames as (name, RGB), count, fps) for an image, a folder or a video; kind is image/folder/video."""
    from gpulite.commands.demo import load_rgb

    p = Path(spec)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise DetectError(f"folder {spec!r} has no images ({', '.join(IMAGE_SUFFIXES)})")
        return "folder", ((f.name, load_rgb(f)) for f in files), len(files), 0.0
    if not p.exists():
        raise DetectError(f"no such file or folder {spec!r}")
    if p.suffix.lower() in VIDEO_SUFFIXES:
        from gpulite.pipeline.calculators.sources import VideoReader, video_info

        info = video_info(p)
        reader = VideoReader(p)
        return "video", ((f"frame {i}", f) for i, (_, f) in enumerate(reader)), info.frames or 0, info.fps or 30.0
    try:
        image = load_rgb(p)
    except ValueError as e:
        raise DetectError(f"{e}; expected an image ({', '.join(IMAGE_SUFFIXES)}), a folder or a video "
                          f"({', '.join(VIDEO_SUFFIXES)})") from None
    return "image", iter([(p.name, image)]), 1, 0.0


def _hits(result: Any, fields: tuple[str, ...]) -> int:
    n = 0
    for f in fields:
        v = getattr(result, f, None)
        if v is None:
            continue
        n += len(v) if isinstance(v, list) else 1
    return n


class _Writer:
    """Where annotated frames go, by input kind."""

    def __init__(self, kind: str, output: str, fps: float) -> None:
        self.kind, self.path, self.fps = kind, Path(output), fps
        self.video: Any = None
        if kind == "folder":
            self.path.mkdir(parents=True, exist_ok=True)
        elif self.path.parent != Path(""):
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, frame: np.ndarray) -> None:
        from PIL import Image

        if self.kind == "image":
            Image.fromarray(frame).save(self.path, format="PNG")
        elif self.kind == "folder":
            Image.fromarray(frame).save(self.path / (Path(name).stem + ".png"), format="PNG")
        else:
            if self.video is None:
                from gpulite.pipeline.calculators.sinks import VideoWriter
                self.video = VideoWriter(self.path, self.fps)
            self.video.write(frame)

    def close(self) -> None:
        if self.video is not None:
            self.video.close()


def run_detect(task: str, input_spec: str, *, output: str | None = None, backend: str | None = None,
               on_result: Callable[[int, str, Any], None] | None = None, progress: bool = True) -> DetectSummary:
    """Run ``task`` over ``input_spec``; see the module docstring. ``on_result(i, name, result)`` per frame."""
    from gpulite.commands.annotate import draw_result
    from gpulite.pipeline.graphs import Progress

    cls = solution_class(task)
    kind, frames, total, fps = open_frames(input_spec)
    kwargs: dict[str, Any] = {"backend": backend}
    if task != "face":
        kwargs["static_image_mode"] = kind != "video"
    if task == "segment":
        kwargs.pop("static_image_mode")
    summary = DetectSummary(task)
    writer = _Writer(kind, output, fps or 30.0) if output else None
    bar = Progress(total) if progress else None
    fields = TASKS[task][2]
    t_start = time.perf_counter()
    try:
        with cls(**kwargs) as sol:
            summary.backend = sol.backend
            for i, (name, frame) in enumerate(frames):
                t0 = time.perf_counter()
                result = sol.process(frame)
                if i == 0:
                    summary.first_frame_ms = (time.perf_counter() - t0) * 1e3
                summary.frames += 1
                n = _hits(result, fields)
                summary.hits += n
                summary.frames_with_hits += n > 0
                if i > 0 or total == 1:  # the first of several frames pays the start-up: left out
                    summary.timed_frames += 1
                    for k, v in sol.last_timings.items():
                        summary.stage_ms[k] = summary.stage_ms.get(k, 0.0) + v
                if on_result is not None:
                    on_result(i, name, result)
                if writer is not None:
                    writer.write(name, draw_result(frame, result))
                if bar is not None:
                    bar.update(summary.frames)
    finally:
        if writer is not None:
            writer.close()
    summary.seconds = time.perf_counter() - t_start
    if bar is not None:
        bar.update(summary.frames, final=True)
    summary.output = writer.path if writer is not None else None
    return summary


def main(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """``gpulite detect``; returns the exit status."""
    from gpulite.solutions.results import to_jsonable

    def emit(i: int, name: str, result: Any) -> None:
        print(json.dumps({"frame": i, "source": name, "result": to_jsonable(result)}), flush=True)

    try:
        summary = run_detect(args.task, args.input, output=args.output,
                             backend=None if args.backend == "auto" else args.backend,
                             on_result=emit if args.json else None, progress=not args.no_progress)
    except DetectError as e:
        print(f"gpulite: error: {e}", file=sys.stderr)
        return 2
    table = summary.lines()
    for line in table:
        if args.json:
            print(line, file=sys.stderr)
        else:
            out(line)
    return 0
