"""``gpulite batch``: a solution over many images or videos with Ray Data, results to Parquet.

::

    gpulite batch mesh photos/ -o mesh.parquet                 # a local Ray on this machine's cores
    gpulite batch pose 'clips/*.mp4' -o pose.parquet --frames-per-task 300
    gpulite batch face paths.csv -o faces.parquet --address auto --workers 8   # a running cluster

INPUT is a folder, a glob (quote it), or a ``.parquet``/``.csv`` file with a ``path`` column
(else its first column) of image or video files. Images give one row each; videos one row per
frame (split into ranges of ``--frames-per-task`` frames, one task each, tracking restarting at
each range). Every row has the same columns and types (:func:`gpulite.batch.arrow_schema`):
``path``, ``frame`` and ``timestamp_ms`` (0 and 0.0 for an image), the solution's results and
``error``. Rows that fail carry their message in ``error`` (counts 0, lists empty); the exit
status is then 2. Needs the ``ray`` extra (``pip install 'gpulite[ray]'``). See docs/batch.md.
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from gpulite.commands.common import EXIT_INPUT, EXIT_OK, InputError, check_backend, check_not_input, check_writable
from gpulite.commands.detect import TASKS
from gpulite.pipeline.calculators.sources import IMAGE_SUFFIXES, VIDEO_SUFFIXES, image_files


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite batch``."""
    p = subparsers.add_parser("batch", help="run a solution over many images/videos with Ray Data, to Parquet",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=sorted(TASKS), help="what to find")
    p.add_argument("input", help="a folder, a quoted glob, or a .parquet/.csv file of paths")
    p.add_argument("-o", "--output", required=True, help="the Parquet file to write")
    p.add_argument("--address", help="a Ray cluster: 'auto' (the one `ray start` runs here) or ray://HOST:PORT; "
                   "default: a local Ray on this machine")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="actors (default: one per CPU)")
    p.add_argument("--backend", default="auto", choices=("auto", "litert", "cpu", "webgpu"))
    p.add_argument("--frames-per-task", type=int, default=300, metavar="N", help="videos: frames per task")
    p.set_defaults(run=run)


def input_paths(spec: str) -> list[str]:
    """The files INPUT names; InputError when it names none."""
    p = Path(spec)
    if p.is_dir():
        files = [str(f) for f in image_files(p)] + sorted(str(f) for f in p.iterdir()
                                                          if f.suffix.lower() in VIDEO_SUFFIXES)
    elif p.suffix.lower() in (".parquet", ".csv") and p.is_file():
        import pandas as pd

        table = pd.read_parquet(p) if p.suffix.lower() == ".parquet" else pd.read_csv(p)
        if table.shape[1] == 0:
            raise InputError(f"{spec!r} has no columns; expected a 'path' column of files")
        files = [str(v) for v in table["path" if "path" in table.columns else table.columns[0]]]
    elif any(c in spec for c in "*?["):
        files = sorted(glob.glob(spec, recursive=True))
    elif p.is_file():
        files = [spec]
    else:
        raise InputError(f"no such file, folder or glob match {spec!r}")
    files = [f for f in files if Path(f).suffix.lower() in (*IMAGE_SUFFIXES, *VIDEO_SUFFIXES)]
    if not files:
        raise InputError(f"{spec!r} names no images ({', '.join(IMAGE_SUFFIXES)}) or videos "
                         f"({', '.join(VIDEO_SUFFIXES)})")
    return files


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    output = Path(args.output)
    if output.suffix.lower() != ".parquet":
        raise InputError(f"-o {args.output!r}: expected a .parquet file")
    check_writable(output, option="-o")
    check_not_input(output, args.input, "-o")  # a .parquet list of paths given as the input
    check_backend(args.backend)
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers must be at least 1, got {args.workers}")
    files = input_paths(args.input)
    quiet_ray_data()
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        import ray

        from gpulite import batch
    except ImportError as e:
        raise InputError(f"gpulite batch needs Ray Data: pip install 'gpulite[ray]' ({e})") from None
    if not ray.is_initialized():  # Ray's own INFO lines (start-up, execution plans) stay out of the output
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    workers = args.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    videos = [f for f in files if Path(f).suffix.lower() in VIDEO_SUFFIXES]
    images = [f for f in files if f not in set(videos)]
    solution = TASKS[args.task][0]
    parts = []
    if images:
        ds = ray.data.from_items([{"path": f} for f in images])
        parts.append(batch.map_solution(ds, args.task, column="path", backend=args.backend, concurrency=workers))
    if videos:
        parts.append(batch.map_video(videos, args.task, backend=args.backend, concurrency=workers,
                                     frames_per_task=args.frames_per_task))
    schema = batch.arrow_schema(batch.solution_class(args.task))
    rows = errors = 0
    output.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(output, schema) as writer:
        for part in parts:
            for table in part.iter_batches(batch_format="pyarrow", batch_size=256):
                table = conform(pa, table, schema)
                writer.write_table(table)
                rows += table.num_rows
                errors += table.num_rows - table.column("error").null_count
    out(f"gpulite batch {args.task} ({solution}): {rows} rows ({len(images)} images, {len(videos)} videos), "
        f"{errors} with errors -> {output}")
    if errors:
        print(f"gpulite: {errors} row(s) failed; their messages are in the 'error' column", file=sys.stderr)
    return EXIT_INPUT if errors else EXIT_OK


def quiet_ray_data() -> None:
    """Only Ray Data's warnings and errors in the log, unless ``RAY_DATA_LOG_LEVEL`` says otherwise:
    its progress bars stay on a terminal, and elsewhere its progress is not logged as INFO lines
    (a dozen a second). Ray Data resets its logger's level at every execution from that variable."""
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "WARNING")


def conform(pa, table, schema):
    """``table`` in the file's ``schema`` (:func:`gpulite.batch.arrow_schema`), so that the columns and their
    types never depend on the mix of images, videos and errors: an image row gets ``frame`` 0 and
    ``timestamp_ms`` 0.0, an all-empty batch's columns their declared types."""
    n = table.num_rows
    fill = {"frame": pa.array([0] * n, pa.int64()), "timestamp_ms": pa.array([0.0] * n, pa.float64())}
    cols = [table.column(f.name).cast(f.type) if f.name in table.column_names
            else fill.get(f.name, pa.nulls(n, f.type)) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)
