"""Named models: where they come from, their sha256, and where they are cached.

A name such as ``"face_detection_short_range"`` resolves, in order, to: an existing file
path; ``$GPULITE_MODEL_DIR/<name>.tflite``; the ``shared/models`` folder of a checkout;
the model embedded in the package (the default face detector); the ``.tflite`` files
that the ``mediapipe`` wheel ships. Every hit from a known name is checked against its
sha256 so a corrupted cache is reported, not run.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gpulite.errors import ModelError

PACKAGE_MODELS = Path(__file__).parent / "data"
SHA256 = {
    "face_detection_full_range_sparse": "",
    "face_detection_short_range": "",
}
NAMES = (
    "face_detection_full_range_sparse", "face_detection_short_range", "face_landmark",
    "face_landmark_with_attention", "hand_landmark_full", "hand_landmark_lite", "hand_recrop",
    "iris_landmark", "palm_detection_full", "palm_detection_lite", "pose_detection",
    "pose_landmark_full", "selfie_segmentation", "selfie_segmentation_landscape",
)
DEFAULT_MODEL = "face_detection_short_range"


def _search_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("GPULITE_MODEL_DIR"):
        dirs.append(Path(os.environ["GPULITE_MODEL_DIR"]))
    here = Path(__file__).resolve()
    for parent in here.parents[:4]:
        dirs.append(parent / "shared" / "models")
        dirs.append(parent.parent / "shared" / "models")
    dirs.append(PACKAGE_MODELS)
    try:
        import mediapipe  # noqa: F401  (optional: the wheel ships the .tflite files)
        mp = Path(mediapipe.__file__).parent / "modules"
        dirs.extend(p for p in mp.glob("*") if p.is_dir())
    except Exception:  # noqa: BLE001 - mediapipe is optional and may fail to import
        pass
    return dirs


def resolve(name_or_path: str | Path) -> Path:
    """A model file for a path or a zoo name; ModelError naming the places looked in if none."""
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
    known = ", ".join(NAMES)
    raise ModelError(
        f"no model file or zoo model named {str(name_or_path)!r}; looked in {looked}. Known names: {known}"
    )


def _digests() -> dict[str, str]:
    out = {}
    sums = Path(__file__).parent / "data" / "SHA256SUMS"
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
