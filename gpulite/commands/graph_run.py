"""``gpulite graph run GRAPH --input IN [--output OUT]``: run a calculator graph over media.

GRAPH is a shipped graph (``face_detection``, ...) or a YAML path. IN is a video, an image,
a folder of images or ``camera:N``. OUT, checked before anything runs, is a video (by suffix)
or a folder of numbered PNGs, or for an image input an image file (format by suffix). A
folder's unreadable images are reported on stderr (one line each) and skipped; the run goes
on and exits with status 2. The summary's per-frame figures leave the first frame (one-time
compilation and uploads) out and show it apart.

Usage::

    gpulite graph run face_detection --input video.mp4 --output out.mp4 --backend webgpu
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from gpulite.commands.common import (
    EXIT_INPUT,
    EXIT_OK,
    InputError,
    check_backend,
    check_output,
    input_kind,
    warn_skipped,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite graph run``."""
    g = subparsers.add_parser("graph", help="run a calculator graph", description=__doc__.split("\n\n")[0])
    sub = g.add_subparsers(dest="graph_command", required=True)
    gr = sub.add_parser("run", help="run a graph over a video, image, folder or camera:N",
                        description=__doc__.split("\n\n")[0])
    gr.add_argument("graph", help="a shipped graph (e.g. face_detection) or a YAML path")
    gr.add_argument("--input", required=True, help="video file, image file, folder of images, or camera:N")
    gr.add_argument("--output", help="annotated video (.mp4, .mkv, ...), a folder for PNG frames, "
                    "or an image file for an image input")
    gr.add_argument("--backend", default="auto", choices=("auto", "cpu", "webgpu", "litert"))
    gr.add_argument("--max-frames", type=int, default=-1, help="stop after N frames (N >= 1; default: all)")
    gr.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    gr.set_defaults(run=run)


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """``gpulite graph run``: check the paths, run the graph with a progress bar, print the summary."""
    from gpulite.pipeline.graphs import config_path, run_media

    if args.max_frames < 1 and args.max_frames != -1:
        raise InputError(f"--max-frames must be at least 1, got {args.max_frames}")
    config_path(args.graph)  # an unknown graph is an input error before any file is opened
    check_output(input_kind(args.input), args.output, args.input, frames_folder=True)
    check_backend(args.backend)
    skipped: list[Path] = []

    def unreadable(path: Path, e: Exception) -> None:
        warn_skipped(e)
        skipped.append(path)

    summary = run_media(args.graph, args.input, output=args.output, backend=args.backend,
                        max_frames=args.max_frames, progress=not args.no_progress, on_unreadable=unreadable)
    for line in summary.lines():
        out(line)
    if skipped:
        out(f"skipped    {len(skipped)} unreadable image(s)")
    return EXIT_INPUT if skipped else EXIT_OK
