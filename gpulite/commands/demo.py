"""``gpulite demo``: face detection and face mesh on the sample image shipped with gpulite.

Runs :class:`~gpulite.solutions.FaceDetector` and :class:`~gpulite.solutions.FaceMesh`
(``refine_landmarks=True``: 478 landmarks with irises) on ``gpulite/data/astronaut.png`` on
the backend gpulite picks by itself (a GPU through WebGPU when there is a real one, else the
numpy CPU backend; ``--backend`` overrides), prints what they found and how long each stage
took, and writes the image with the results drawn on it (``./gpulite_demo.png``, ``-o`` to
change; the format follows the extension). The first call of each solution pays the start-up
(model loading, GPU pipeline compilation) and is shown apart; the stages shown are the median
of the next five calls.

Usage::

    gpulite demo                         # writes ./gpulite_demo.png
    gpulite demo -o /tmp/faces.png --backend cpu
    gpulite demo --image my_photo.jpg

From Python: ``run_demo(output="x.png", backend=None)`` returns a :class:`DemoResult`.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpulite.commands.common import (
    check_backend,
    check_not_input,
    check_writable,
    image_format,
    read_image,
    save_image,
)
from gpulite.errors import GpuliteError

log = logging.getLogger(__name__)

SAMPLE_IMAGE = Path(__file__).resolve().parents[1] / "data" / "astronaut.png"
SAMPLE_CREDIT = "NASA portrait of astronaut Eileen Collins, public domain"
DEFAULT_OUTPUT = "gpulite_demo.png"
KEYPOINT_NAMES = ("right eye", "left eye", "nose tip", "mouth", "right ear", "left ear")


@dataclass
class DemoResult:
    """What one demo run found and measured (timings in milliseconds)."""

    backend: str
    backend_reason: str
    image_size: tuple[int, int]
    detections: list = field(default_factory=list)
    faces: list = field(default_factory=list)
    detector_timings: dict[str, float] = field(default_factory=dict)
    mesh_timings: dict[str, float] = field(default_factory=dict)
    detector_first_ms: float = 0.0
    mesh_first_ms: float = 0.0
    mesh_error: str | None = None
    output: Path | None = None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite demo``."""
    p = subparsers.add_parser("demo", help="face detection + face mesh on a sample image; writes an annotated PNG",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                   help=f"annotated image to write, format by extension (default ./{DEFAULT_OUTPUT})")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "webgpu", "litert"),
                   help="where to run (default: gpulite's automatic choice)")
    p.add_argument("--image", default=None, help="run on this image instead of the shipped sample")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """``gpulite demo``; returns the exit status."""
    backend = None if args.backend == "auto" else args.backend
    res = run_demo(output=args.output, backend=backend, image=args.image)
    report(res, args.image, out)
    return 0


WARM_CALLS = 5  # warm calls whose per-stage times are reported (their median: one call is a noisy sample)


def _timed(solution, image: np.ndarray):
    """(result of the last call, milliseconds of the first call, median per-stage ms of the warm calls)."""
    t0 = time.perf_counter()
    solution.process(image)
    first = (time.perf_counter() - t0) * 1e3
    stages: dict[str, list[float]] = {}
    for _ in range(WARM_CALLS):
        result = solution.process(image)
        for name, ms in solution.last_timings.items():
            stages.setdefault(name, []).append(ms)
    return result, first, {name: statistics.median(ms) for name, ms in stages.items()}


def run_demo(*, output: str | Path | None = DEFAULT_OUTPUT, backend: str | None = None,
             image: str | Path | None = None) -> DemoResult:
    """Run both solutions on the sample image (or ``image``) and write the annotated image to ``output``."""
    from gpulite.commands.annotate import draw_result, face_closeup
    from gpulite.solutions import FaceDetector, FaceMesh
    from gpulite.solutions.results import FaceMeshResult

    if output is not None:  # an unsupported extension or an unwritable place fails before anything runs
        image_format(output)
        check_writable(output)
        if image is not None:
            check_not_input(output, image, "-o")
    check_backend(backend)
    rgb = read_image(image or SAMPLE_IMAGE)
    with FaceDetector(backend=backend) as fd:
        det, det_first, det_stages = _timed(fd, rgb)
        res = DemoResult(fd.backend, fd.backend_reason, (rgb.shape[1], rgb.shape[0]),
                         detections=det.detections or [], detector_timings=det_stages, detector_first_ms=det_first)
    mesh = FaceMeshResult(None)
    try:
        with FaceMesh(static_image_mode=True, refine_landmarks=True, backend=res.backend) as fm:
            mesh, res.mesh_first_ms, res.mesh_timings = _timed(fm, rgb)
            res.faces = mesh.multi_face_landmarks or []
    except GpuliteError as e:  # e.g. the landmark model is not installed
        res.mesh_error = str(e)
        log.warning("face mesh did not run: %s", e)
    if output is not None:
        from types import SimpleNamespace

        found = SimpleNamespace(detections=res.detections, multi_face_landmarks=res.faces)
        drawn = draw_result(rgb, found, scale=max(1, 640 // max(rgb.shape[:2])))
        if res.detections:  # the whole image, and beside it a close-up of the first face
            size = drawn.shape[0]
            closeup = face_closeup(rgb, found, res.detections[0].relative_bounding_box, size=size)
            drawn = np.concatenate([drawn, closeup], axis=1)
        res.output = save_image(output, drawn)
    return res


def _stages(timings: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in timings.items() if k != "total")


def report(res: DemoResult, image: str | Path | None, out: Callable[[str], None] = print) -> None:
    """Print what :func:`run_demo` found, in the CLI's layout."""
    w, h = res.image_size
    src = f"{image} ({w}x{h})" if image else f"{SAMPLE_IMAGE.name} shipped with gpulite ({w}x{h}; {SAMPLE_CREDIT})"
    out(f"image      {src}")
    out(f"backend    {res.backend} ({res.backend_reason})")
    out(f"faces      {len(res.detections)} found by FaceDetector (BlazeFace short range)")
    for i, d in enumerate(res.detections):
        b = d.relative_bounding_box
        x0, y0, x1, y1 = b.to_pixels(w, h)
        out(f"  face {i}   score {d.score:.3f}, box x={x0} y={y0} w={x1 - x0} h={y1 - y0} px "
            f"(relative {b.xmin:.3f} {b.ymin:.3f} {b.width:.3f} {b.height:.3f})")
        named = zip(KEYPOINT_NAMES, d.keypoints, strict=False)  # BlazeFace: 6 keypoints
        out("           " + ", ".join(f"{name} {k.to_pixel(w, h)}" for name, k in named))
    if res.mesh_error is not None:
        out(f"mesh       not run: {res.mesh_error}")
    else:
        out(f"mesh       {len(res.faces)} face(s) from FaceMesh(refine_landmarks=True)")
        for i, f in enumerate(res.faces):
            out(f"  face {i}   {len(f)} landmarks: nose tip {f.landmark[1].to_pixel(w, h)}, "
                f"iris centres {f.landmark[468].to_pixel(w, h)} {f.landmark[473].to_pixel(w, h)} px")
    out(f"timings    ms per stage, median of {WARM_CALLS} warm calls (the first call, with start-up, in brackets)")
    out(f"  detector {res.detector_timings.get('total', 0.0):8.2f} total  [{res.detector_first_ms:.0f}]  "
        f"{_stages(res.detector_timings)}")
    if res.mesh_error is None:
        busy = {k: v for k, v in res.mesh_timings.items() if v >= 0.05 or k == "total"}
        out(f"  mesh     {res.mesh_timings.get('total', 0.0):8.2f} total  [{res.mesh_first_ms:.0f}]  {_stages(busy)}")
    if res.output is not None and res.detections:
        out(f"wrote      {res.output} (the image and a close-up of the first face: box green, keypoints red, "
            "landmarks cyan, irises yellow)")
    elif res.output is not None:
        out(f"wrote      {res.output} (the image alone: no face was found, so there is no close-up)")
