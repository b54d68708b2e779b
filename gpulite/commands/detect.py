"""``gpulite detect``: run a solution over an image, a folder of images or a video.

::

    gpulite detect face photo.jpg                        # prints a summary table
    gpulite detect face group.jpg --model full --max-num 3 --min-confidence 0.7
    gpulite detect mesh clip.mp4 -o annotated.mp4 --refine   # 478 landmarks with irises, tracked
    gpulite detect pose photos/ -o out/ --backend cpu     # a folder in, a folder of images out
    gpulite detect hands photo.jpg --json                 # one JSON object per frame on stdout

TASK is ``face`` (FaceDetector), ``mesh`` (FaceMesh), ``hands``, ``pose`` or ``segment``
(SelfieSegmentation). Videos (read with PyAV, else OpenCV) are processed as videos (tracking between
frames); images and folders image by image (``static_image_mode``). ``-o`` writes the frames
with the results drawn on them, and is checked before anything runs: an image input writes
the image file ``-o`` names, in the format its extension names (``out.jpg`` JPEG, ``out.png``
PNG); a folder input writes into the folder ``-o`` names one file per input image, with the
input's name and format (so ``x.png`` and ``x.jpg`` stay two files); a video input writes the
video ``-o`` names. In a folder, an image that cannot be read is reported on stderr (one line
naming it and why) and skipped, and the run goes on and exits with status 2.

A progress bar goes to stderr and a summary table (frames, how many had something, the first
frame's milliseconds apart, then per-stage medians over the other frames, frames/s) to stdout;
with ``--json`` stdout carries one JSON line per frame instead and the table goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.commands.common import (
    EXIT_INPUT,
    EXIT_OK,
    CallTimes,
    InputError,
    check_backend,
    check_output,
    folder_images,
    input_kind,
    read_image,
    readable_images,
    save_image,
)

log = logging.getLogger(__name__)

# task -> (solution class name in gpulite.solutions, what one "hit" is, result fields that hold the hits)
TASKS = {
    "face": ("FaceDetector", "faces", ("detections",)),
    "mesh": ("FaceMesh", "faces", ("multi_face_landmarks",)),
    "hands": ("Hands", "hands", ("multi_hand_landmarks",)),
    "pose": ("Pose", "people", ("pose_landmarks",)),
    "segment": ("SelfieSegmentation", "a person", ("segmentation_mask",)),  # a frame whose mask is > 0.5 somewhere
}
# option -> the tasks it applies to
OPTION_TASKS = {"refine": ("mesh",), "max_num": ("face", "mesh", "hands"),
                "min_confidence": ("face", "mesh", "hands", "pose"), "model": ("face",)}


@dataclass
class DetectSummary:
    """What one ``gpulite detect`` run did: counts, and the first frame's time apart from the others'."""

    task: str
    backend: str = ""
    frames: int = 0
    frames_with_hits: int = 0
    hits: int = 0
    times: CallTimes = field(default_factory=CallTimes)
    wall_s: float = 0.0  # wall-clock seconds of the frames after the first: reading, solution, drawing, writing
    skipped: list[Path] = field(default_factory=list)
    output: Path | None = None
    transfers: list[dict[str, int]] = field(default_factory=list)  # webgpu: per frame after the first

    def lines(self) -> list[str]:
        """The closing summary table."""
        what = TASKS[self.task][1]
        t = self.times
        rows = [f"{'task':<24}{self.task} ({TASKS[self.task][0]}) on {self.backend}",
                f"{'frames':<24}{self.frames}" + (f" ({len(self.skipped)} unreadable skipped)" if self.skipped else ""),
                f"{'frames with ' + what:<24}{self.frames_with_hits}"]
        if self.task != "segment":  # one mask per frame: its count says nothing
            rows.append(f"{what + ' found':<24}{self.hits}")
        if t.first_ms is not None:
            rows.append(f"{'first frame':<24}{t.first_ms:.1f} ms (includes start-up: model loading, compilation)")
        if t.rest_ms:
            fps = 1e3 / t.mean if t.mean else 0.0
            rows.append(f"{'after the first':<24}median {t.median:.2f} ms, mean {t.mean:.2f} ms per frame over "
                        f"{len(t.rest_ms)} frames in the solution ({fps:.1f} frames/s for the solution alone)")
            if self.wall_s > 0:
                rows.append(f"{'wall clock':<24}{len(t.rest_ms) / self.wall_s:.1f} frames/s after the first frame "
                            f"({self.wall_s:.2f} s for {len(t.rest_ms)} frames: reading, solution, drawing, writing)")
            if self.transfers:
                med = {k: statistics.median(d[k] for d in self.transfers) for k in self.transfers[0]}
                rows.append(f"{'host<->GPU':<24}median per frame after the first: "
                            f"{med['bytes_uploaded'] / 1024:.1f} KiB up, {med['bytes_read_back'] / 1024:.1f} KiB down, "
                            f"{med['submits']:g} submits")
            stages = t.stage_medians()
            rows.append(f"{'stage':<24}{'median ms/frame':>16} (after the first frame)")
            rows.extend(f"  {k:<22}{v:>16.2f}" for k, v in stages.items() if k != "total" and v >= 0.01)
            if "total" in stages:
                rows.append(f"  {'total':<22}{stages['total']:>16.2f}")
        elif t.first_stages:
            rows.append(f"{'stage':<24}{'ms':>16} (the only frame, start-up included)")
            rows.extend(f"  {k:<22}{v:>16.2f}" for k, v in t.first_stages.items() if v >= 0.01)
        if self.output is not None:
            rows.append(f"{'wrote':<24}{self.output}")
        width = max(len(r) for r in rows)
        return ["-" * width, *rows, "-" * width]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite detect``."""
    p = subparsers.add_parser("detect", help="run a solution (face, mesh, hands, pose, segment) on images or a video",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS), help="what to find")
    p.add_argument("input", help="an image, a folder of images, or a video file")
    p.add_argument("-o", "--output", help="annotated output: an image file (image input; format by extension), "
                   "a folder (folder input), a video file (video input)")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "webgpu", "litert"))
    p.add_argument("--refine", action="store_true", help="mesh: 478 landmarks with irises (refine_landmarks)")
    p.add_argument("--max-num", type=int, metavar="N", help="face, mesh, hands: at most N faces / hands "
                   "(face: the N highest scores; default: mesh 1, hands 2, face all)")
    p.add_argument("--min-confidence", type=float, metavar="X",
                   help="face, mesh, hands, pose: min_detection_confidence in [0, 1] (default: the solution's)")
    p.add_argument("--model", choices=("short", "full"), help="face: short range (~2 m, default) or full range "
                   "(~5 m, the full-range BlazeFace)")
    p.add_argument("--json", action="store_true", help="one JSON line per frame on stdout (table to stderr)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(run=run)


def solution_class(task: str) -> Any:
    """The solution class for ``task``, imported now."""
    import gpulite.solutions as solutions

    return getattr(solutions, TASKS[task][0])


def solution_kwargs(task: str, *, video: bool, refine: bool = False, max_num: int | None = None,
                    min_confidence: float | None = None, model: str | None = None) -> dict[str, Any]:
    """The solution's keyword arguments for the CLI options; InputError for an option ``task`` has not."""
    given = {"refine": refine or None, "max_num": max_num, "min_confidence": min_confidence, "model": model}
    for name, value in given.items():
        if value is not None and task not in OPTION_TASKS[name]:
            raise InputError(f"--{name.replace('_', '-')} applies to {', '.join(OPTION_TASKS[name])}, "
                             f"not to {task}")
    if max_num is not None and max_num < 1:
        raise InputError(f"--max-num must be at least 1, got {max_num}")
    if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
        raise InputError(f"--min-confidence must be in [0, 1], got {min_confidence}")
    kwargs: dict[str, Any] = {}
    if task in ("mesh", "hands", "pose"):
        kwargs["static_image_mode"] = not video
    if min_confidence is not None:
        kwargs["min_detection_confidence"] = min_confidence
    if task == "face" and model is not None:
        kwargs["model"] = model
    if task == "mesh":
        kwargs["refine_landmarks"] = refine
        if max_num is not None:
            kwargs["max_num_faces"] = max_num
    if task == "hands" and max_num is not None:
        kwargs["max_num_hands"] = max_num
    return kwargs


def open_frames(spec: str, skipped: list[Path]) -> tuple[str, Iterator[tuple[str, np.ndarray]], int, float]:
    """(kind, frames as (name, RGB), count, fps) for an image, a folder or a video; kind is image/folder/video.

    A folder's unreadable images are reported, appended to ``skipped`` and passed over.
    """
    kind = input_kind(spec)
    if kind == "camera":
        raise InputError(f"{spec!r}: gpulite detect reads images, folders and videos (cameras: gpulite graph run)")
    if kind == "folder":
        files = folder_images(spec)
        return kind, ((f.name, rgb) for f, rgb in readable_images(files, skipped)), len(files), 0.0
    if kind == "video":
        from gpulite.pipeline.calculators.sources import VideoReader, video_info

        info = video_info(spec)
        reader = VideoReader(spec)
        return kind, ((f"frame {i}", f) for i, (_, f) in enumerate(reader)), info.frames or 0, info.fps or 30.0
    return kind, iter([(Path(spec).name, read_image(spec))]), 1, 0.0


def _hits(result: Any, fields: tuple[str, ...]) -> int:
    """Faces, hands or people in a result; for a segmentation mask, 1 when it is > 0.5 somewhere."""
    n = 0
    for f in fields:
        v = getattr(result, f, None)
        if v is None:
            continue
        if isinstance(v, np.ndarray):
            n += bool((v > 0.5).any())
        else:
            n += len(v) if isinstance(v, list) else 1
    return n


def _top(result: Any, n: int) -> Any:
    """A face detection result with only its ``n`` highest-scoring detections."""
    if not result.detections or len(result.detections) <= n:
        return result
    return dataclasses.replace(result, detections=sorted(result.detections, key=lambda d: -d.score)[:n])


class _Writer:
    """Where annotated frames go: one image, one image per input in a folder, or a video."""

    def __init__(self, kind: str, output: str, fps: float) -> None:
        self.kind, self.path, self.fps = kind, Path(output), fps
        self.video: Any = None
        if kind == "folder":
            self.path.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, frame: np.ndarray) -> None:
        if self.kind == "image":
            save_image(self.path, frame)
        elif self.kind == "folder":
            save_image(self.path / name, frame)  # the input's name and format: x.png and x.jpg stay apart
        else:
            if self.video is None:
                from gpulite.pipeline.calculators.sinks import VideoWriter
                self.video = VideoWriter(self.path, self.fps)
            self.video.write(frame)

    def close(self) -> None:
        if self.video is not None:
            self.video.close()


def run_detect(task: str, input_spec: str, *, output: str | None = None, backend: str | None = None,
               on_result: Callable[[int, str, Any], None] | None = None, progress: bool = True,
               refine: bool = False, max_num: int | None = None, min_confidence: float | None = None,
               model: str | None = None) -> DetectSummary:
    """Run ``task`` over ``input_spec``; see the module docstring. ``on_result(i, name, result)`` per frame.

    Raises
    ------
    InputError
        A missing input, an output that does not fit the input, an option the task has not;
        all found before the first frame is processed.
    """
    from gpulite.commands.annotate import draw_result
    from gpulite.pipeline.graphs import Progress

    summary = DetectSummary(task)
    kind = input_kind(input_spec)
    kwargs = solution_kwargs(task, video=kind == "video", refine=refine, max_num=max_num,
                             min_confidence=min_confidence, model=model)
    check_output(kind, output, input_spec)
    check_backend(backend)
    kind, frames, total, fps = open_frames(input_spec, summary.skipped)
    writer = _Writer(kind, output, fps or 30.0) if output else None
    bar = Progress(total) if progress else None
    fields = TASKS[task][2]
    try:
        with solution_class(task)(backend=backend, **kwargs) as sol:
            summary.backend = sol.backend
            after_first = 0.0
            seen: deque[tuple[str, np.ndarray]] = deque()

            def images() -> Iterator[np.ndarray]:
                for name, frame in frames:
                    seen.append((name, frame))
                    yield frame

            def one_by_one() -> Iterator[tuple[Any, float]]:
                for frame in images():
                    t0 = time.perf_counter()
                    result = sol.process(frame)
                    yield result, (time.perf_counter() - t0) * 1e3

            # a video: frame N+1 goes to the GPU before frame N's results are read back (same results);
            # its per-frame time is gpulite's own (last_timings' total), frame reading left out as for images
            results = ((r, sol.last_timings["total"]) for r in sol.process_video(images())) if kind == "video" \
                else one_by_one()
            for i, (result, ms) in enumerate(results):
                name, frame = seen.popleft()
                summary.times.add(ms, sol.last_timings)
                if i and sol.last_transfers:
                    summary.transfers.append(dict(sol.last_transfers))
                if task == "face" and max_num is not None:
                    result = _top(result, max_num)
                summary.frames += 1
                n = _hits(result, fields)
                summary.hits += n
                summary.frames_with_hits += n > 0
                if on_result is not None:
                    on_result(i, name, result)
                if writer is not None:
                    writer.write(name, draw_result(frame, result))
                if bar is not None:
                    bar.update(summary.frames + len(summary.skipped))
                if i == 0:
                    after_first = time.perf_counter()
    finally:
        if writer is not None:
            writer.close()
    if summary.frames > 1:
        summary.wall_s = time.perf_counter() - after_first
    if bar is not None:
        bar.update(summary.frames + len(summary.skipped), final=True)
    summary.output = writer.path if writer is not None else None
    return summary


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """``gpulite detect``; returns the exit status (2 when a folder's image was skipped)."""
    from gpulite.solutions.results import to_jsonable

    def emit(i: int, name: str, result: Any) -> None:
        print(json.dumps({"frame": i, "source": name, "result": to_jsonable(result)}), flush=True)

    summary = run_detect(args.task, args.input, output=args.output,
                         backend=None if args.backend == "auto" else args.backend,
                         on_result=emit if args.json else None, progress=not args.no_progress,
                         refine=args.refine, max_num=args.max_num, min_confidence=args.min_confidence,
                         model=args.model)
    for line in summary.lines():
        if args.json:
            print(line, file=sys.stderr)
        else:
            out(line)
    return EXIT_INPUT if summary.skipped else EXIT_OK
