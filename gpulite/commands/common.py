"""What the ``gpulite`` commands share: exit codes and error lines, inputs, outputs, timing figures.

Exit codes are the same in every command: 0 success, 1 a runtime failure (a backend that
cannot run a model, a calculator that raised), 2 an input or usage error (argparse's code:
a missing or unreadable file, an output path whose extension does not fit, a bad option
value), and 2 as well when a folder run skipped unreadable files.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.errors import BackendNotFoundError, FlagError, GpuliteError, GraphConfigError, ModelError
from gpulite.pipeline.calculators.sources import (
    IMAGE_SUFFIXES,
    VIDEO_SUFFIXES,
    SourceUnavailableError,
    image_files,
    load_image,
)

EXIT_OK, EXIT_FAILURE, EXIT_INPUT = 0, 1, 2
# Output suffix -> Pillow format name.
IMAGE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP", ".webp": "WEBP",
                 ".tif": "TIFF", ".tiff": "TIFF"}


class InputError(GpuliteError, ValueError):
    """An input or usage error the user can fix (exit status 2)."""


def exit_code(e: BaseException) -> int:
    """2 for input and usage errors (including a missing or malformed model file, an image or video
    that cannot be read, a camera that is not there, a GPULITE_* variable with a bad value), else 1."""
    input_errors = (InputError, ModelError, GraphConfigError, BackendNotFoundError, SourceUnavailableError,
                    FileNotFoundError, FlagError)
    return EXIT_INPUT if isinstance(e, input_errors) else EXIT_FAILURE


def report_error(e: BaseException, verbose: bool = False) -> int:
    """Print ``gpulite: error: ...`` (one line; the traceback too when ``verbose``) and return the exit code."""
    if verbose:
        traceback.print_exception(e, file=sys.stderr)
    text = str(e).strip().splitlines()
    what = text[0] if text else type(e).__name__
    if not isinstance(e, GpuliteError | FileNotFoundError):
        what = f"{type(e).__name__}: {what}"  # an unexpected error: its type helps a bug report
    print(f"gpulite: error: {what}", file=sys.stderr)
    return exit_code(e)


def warn_skipped(why: BaseException | str) -> None:
    """The one stderr line for an input file a folder run skipped (``why`` names the file)."""
    print(f"gpulite: skipped: {why}", file=sys.stderr)


def check_backend(name: str | None) -> None:
    """InputError, before any work, when the backend ``--backend`` names cannot run on this machine.

    ``None`` and ``"auto"`` pass (gpulite picks one that starts); so does a backend without a
    probe. The message is the probe's reason (e.g. ``ai-edge-litert is not installed``).
    """
    if name in (None, "auto"):
        return
    from gpulite.backends import registry

    try:
        entry = registry.entry(name)
    except GpuliteError as e:
        raise InputError(f"--backend {name}: {e}") from None
    if entry.probe is not None:
        rank, why = registry.rank(entry)
        if rank is None:
            raise InputError(f"--backend {name} cannot run here: {why}")


# -- inputs ---------------------------------------------------------------------------------
def read_image(path: str | Path) -> np.ndarray:
    """An image file as upright RGB uint8 (see :func:`~gpulite.pipeline.calculators.sources.load_image`).

    Raises
    ------
    InputError
        No such file, or not an image Pillow can decode (the message names the file and why).
    """
    try:
        return load_image(path)
    except SourceUnavailableError as e:
        raise InputError(str(e)) from None


def input_kind(spec: str) -> str:
    """``"image"``, ``"folder"``, ``"video"`` or ``"camera"`` for an input spec; InputError if it cannot be one."""
    if spec.startswith("camera:"):
        return "camera"
    p = Path(spec)
    if p.is_dir():
        return "folder"
    if not p.exists():
        raise InputError(f"no such file or folder {spec!r}")
    suffix = p.suffix.lower()
    if suffix in VIDEO_SUFFIXES:
        return "video"
    if suffix in IMAGE_SUFFIXES:
        return "image"
    raise InputError(f"{spec!r}: unsupported input type {suffix or '(no extension)'!r}; expected an image "
                     f"({', '.join(IMAGE_SUFFIXES)}), a folder of images or a video ({', '.join(VIDEO_SUFFIXES)})")


def folder_images(folder: str | Path) -> list[Path]:
    """The images of ``folder`` by suffix, in name order; InputError when there are none."""
    files = image_files(folder)
    if not files:
        raise InputError(f"folder {str(folder)!r} has no images ({', '.join(IMAGE_SUFFIXES)})")
    return files


def readable_images(files: Sequence[Path], skipped: list[Path]) -> Iterator[tuple[Path, np.ndarray]]:
    """(path, RGB) for each of ``files`` that decodes; the others are reported, appended to ``skipped`` and passed."""
    for f in files:
        try:
            yield f, load_image(f)
        except SourceUnavailableError as e:
            warn_skipped(e)
            skipped.append(f)


# -- outputs --------------------------------------------------------------------------------
def image_format(path: str | Path) -> str:
    """Pillow's format name for an output image path, by its extension; InputError for others."""
    suffix = Path(path).suffix.lower()
    if suffix not in IMAGE_FORMATS:
        raise InputError(f"output {str(path)!r}: unsupported image extension {suffix or '(none)'!r}; "
                         f"use one of {', '.join(IMAGE_FORMATS)}")
    return IMAGE_FORMATS[suffix]


def check_writable(path: str | Path, *, folder: bool = False, option: str = "output") -> None:
    """InputError, before any work, unless files can be written at ``path`` (a folder with ``folder``).

    The nearest existing folder on the way to ``path`` must be a folder (not a file) in which a
    file can be created (tried, then removed: this catches read-only mounts and ``/proc`` alike);
    ``path`` itself must not be a folder (a file output) or a file (a folder output). Missing
    folders on the way are made later, when the output is written.
    """
    p = Path(path).absolute()
    if folder and p.exists() and not p.is_dir():
        raise InputError(f"{option} {str(path)!r}: exists and is not a folder")
    if not folder and p.is_dir():
        raise InputError(f"{option} {str(path)!r}: is a folder, not a file")
    here = p if folder else p.parent
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise InputError(f"{option} {str(path)!r}: cannot be made because {str(here)!r} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=here, prefix=".gpulite-write-check-")
    except OSError as e:
        raise InputError(f"{option} {str(path)!r}: cannot write files in {str(here)!r} "
                         f"({e.strerror or type(e).__name__})") from None
    os.close(fd)
    os.unlink(probe)


def save_image(path: str | Path, rgb: np.ndarray) -> Path:
    """Write ``rgb`` (H, W, 3 uint8) in the format its extension names; parent folders are made."""
    from PIL import Image

    p = Path(path)
    fmt = image_format(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(rgb[..., :3])).save(p, format=fmt)
    return p


def check_output(kind: str, output: str | None, input_spec: str, *, frames_folder: bool = False) -> str | None:
    """What ``output`` will be for an input of ``kind`` (``"image"``, ``"folder"``, ``"video"``), checked up front.

    An image input writes one image (format by extension); a folder input writes a folder (one
    file per input image, named as the input); a video or camera input writes a video. With
    ``frames_folder`` (``graph run``), an image, video or camera input may also write a folder
    of numbered PNGs. Anything else, or a place that cannot be written (:func:`check_writable`), is
    an :class:`InputError` raised before a frame is processed.

    Returns
    -------
    str or None
        ``"image"``, ``"folder"`` or ``"video"``; None without an output.
    """
    if not output:
        return None
    what = _output_kind(kind, output, input_spec, frames_folder)
    check_writable(output, folder=what == "folder")
    check_not_input(output, input_spec)
    return what


def check_not_input(output: str | Path, input_file: str | Path, option: str = "output") -> None:
    """InputError when ``output`` is the input file itself (a link to it included): writing it would
    destroy the input, a video while it is being read."""
    o, i = Path(output), Path(input_file)
    if i.is_file() and (o.resolve() == i.resolve() or (o.exists() and o.samefile(i))):
        raise InputError(f"{option} {str(output)!r} is the input file; it would be overwritten (write elsewhere)")


def _output_kind(kind: str, output: str, input_spec: str, frames_folder: bool) -> str:
    p = Path(output)
    suffix = p.suffix.lower()
    if kind == "folder":
        if suffix in IMAGE_FORMATS or suffix in VIDEO_SUFFIXES or p.is_file():
            raise InputError(f"output {output!r}: a folder input needs an output folder (one image per input), "
                             "not a file")
        if p.resolve() == Path(input_spec).resolve():
            raise InputError(f"output folder {output!r} is the input folder; its images would be overwritten")
        return "folder"
    if p.is_dir() and (suffix in IMAGE_FORMATS or suffix in VIDEO_SUFFIXES):
        raise InputError(f"output {output!r}: is a folder, not a file")
    if kind == "image" and suffix in IMAGE_FORMATS:
        return "image"
    if kind != "image" and suffix in VIDEO_SUFFIXES:
        return "video"
    if frames_folder and not suffix and not p.is_file():
        return "folder"
    wanted = (f"an image file ({', '.join(IMAGE_FORMATS)})" if kind == "image"
              else f"a video file ({', '.join(VIDEO_SUFFIXES)})")
    if frames_folder:
        wanted += " or a folder (no extension) for PNG frames"
    got = f"extension {suffix!r}" if suffix else "a name with no extension"
    article = "an" if kind == "image" else "a"
    raise InputError(f"output {output!r}: {article} {kind} input needs {wanted}, got {got}")


# -- timings --------------------------------------------------------------------------------
@dataclass
class CallTimes:
    """Milliseconds of repeated calls: the first (start-up: compiling, uploads) apart from the rest.

    ``median``/``mean`` and the per-stage figures never include the first call; with one call
    they are None and only :attr:`first_ms` is known.
    """

    first_ms: float | None = None
    rest_ms: list[float] = field(default_factory=list)
    first_stages: dict[str, float] = field(default_factory=dict)
    rest_stages: dict[str, list[float]] = field(default_factory=dict)

    def add(self, ms: float, stages: dict[str, float] | None = None) -> None:
        """Record one call (``stages``: its per-stage milliseconds, if known)."""
        if self.first_ms is None:
            self.first_ms, self.first_stages = ms, dict(stages or {})
            return
        self.rest_ms.append(ms)
        for k, v in (stages or {}).items():
            self.rest_stages.setdefault(k, []).append(v)

    @property
    def median(self) -> float | None:
        return statistics.median(self.rest_ms) if self.rest_ms else None

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.rest_ms) if self.rest_ms else None

    def stage_medians(self) -> dict[str, float]:
        """Median milliseconds per stage over the calls after the first."""
        return {k: statistics.median(v) for k, v in self.rest_stages.items()}

    def summary(self) -> str:
        """``first 812.3 ms; then median 10.2 ms, mean 10.9 ms over 9 calls`` (or the first call only)."""
        if self.first_ms is None:
            return "no calls"
        head = f"first {self.first_ms:.1f} ms"
        if not self.rest_ms:
            return head + " (one call: includes start-up; no per-call figures)"
        return f"{head}; then median {self.median:.2f} ms, mean {self.mean:.2f} ms over {len(self.rest_ms)} calls"


# -- benchmarks -----------------------------------------------------------------------------
def seeded_inputs(details: list[dict[str, Any]], seed: int = 0) -> list[np.ndarray]:
    """One array per input detail: uniform [-1, 1) for float inputs, zeros for others."""
    rng = np.random.default_rng(seed)
    xs = []
    for d in details:
        dt = np.dtype(d["dtype"])
        shape = tuple(int(s) for s in d["shape"])
        xs.append(rng.uniform(-1, 1, shape).astype(dt) if dt.kind == "f" else np.zeros(shape, dt))
    return xs


def prepared_invoke(it: Any) -> Any:
    """Allocate ``it`` (a gpulite or LiteRT interpreter), feed seeded inputs, return its bare ``invoke``."""
    it.allocate_tensors()
    details = it.get_input_details()
    for d, x in zip(details, seeded_inputs(details), strict=True):
        it.set_tensor(d["index"], x)
    return it.invoke


def litert_interpreter(path: Path, threads: int) -> tuple[Any, str]:
    """(LiteRT interpreter, allocated, "") or (None, why not)."""
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRtInterpreter
    except ImportError:
        return None, "LiteRT (ai-edge-litert) is not installed"
    from gpulite.backends.litert.quiet import allocated

    try:
        return allocated(LiteRtInterpreter, model_path=str(path), num_threads=threads), ""
    except (RuntimeError, ValueError) as e:
        return None, f"LiteRT: {str(e).splitlines()[0]}"
