"""``gpulite models list|pull|path``: output and exit status (2 for input errors)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpulite import cli, zoo
from tests.assets import model_path

ROOT = Path(__file__).resolve().parents[2]


def _models(*args: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPULITE_")}
    e.update(env, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "gpulite.cli", "models", *args], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=300)


def test_list_shows_every_model_its_source_digest_and_where_it_is(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "hand_recrop.tflite").write_bytes(model_path("hand_recrop").read_bytes())
    r = _models("list", GPULITE_MODEL_DIR=str(tmp_path / "mine"), GPULITE_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[1:-1]}
    assert sorted(rows) == sorted(zoo.ALL_NAMES)
    for name, row in rows.items():
        label = zoo.SOURCE_OF[name].label if name in zoo.SOURCE_OF else zoo.ASSEMBLED[name].label
        assert label in row and zoo.digest(name)[:12] in row, row
    assert rows["hand_recrop"].endswith(str(tmp_path / "mine" / "hand_recrop.tflite"))
    assert rows["pose_landmark_heavy"].endswith("not present (gpulite models pull)")  # only ever in the cache
    assert r.stdout.splitlines()[-1] == f"cache: {tmp_path / 'cache' / 'models'}"


def test_path_prints_the_resolved_file(tmp_path):
    r = _models("path", "face_detection_short_range", GPULITE_CACHE_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(zoo.resolve("face_detection_short_range"))


def test_path_of_a_model_not_present_says_how_to_get_it(tmp_path):
    r = _models("path", "pose_landmark_heavy", GPULITE_CACHE_DIR=str(tmp_path))
    assert r.returncode == 2, "an input error, as in `gpulite run` (below)"
    assert "not cached" in r.stderr and "gpulite models pull pose_landmark_heavy" in r.stderr
    assert "GPULITE_OFFLINE" not in r.stderr and "downloads are off" not in r.stderr, "the variable is not set"
    r = _models("path", "pose_landmark_heavy", GPULITE_CACHE_DIR=str(tmp_path), GPULITE_OFFLINE="1")
    assert r.returncode == 2 and "downloads are off (GPULITE_OFFLINE=1)" in r.stderr, r.stderr
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPULITE_")}
    e.update(GPULITE_CACHE_DIR=str(tmp_path), GPULITE_OFFLINE="1",
             PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    ran = subprocess.run([sys.executable, "-m", "gpulite.cli", "run", "pose_landmark_heavy", "--input",
                          str(ROOT / "tests/data/images/astronaut.png")], cwd=ROOT, env=e,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == r.returncode and "not cached" in ran.stderr, ran.stderr


@pytest.mark.parametrize("args", [("path", "no_such_model"), ("pull", "no_such_model"), ("pull",)])
def test_input_errors_exit_2(args, tmp_path):
    r = _models(*args, GPULITE_CACHE_DIR=str(tmp_path))
    assert r.returncode == 2, r
    assert re.match(r"gpulite: error: models (path|pull): (not zoo models: no_such_model|name a zoo model)",
                    r.stderr), r.stderr


def test_pull_fetches_what_is_missing(tmp_path, monkeypatch, capsys):
    """Through a local archive (the download itself: tests/test_zoo.py::test_real_download)."""
    data = model_path("hand_recrop").read_bytes()
    archive = tmp_path / "source.whl"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("m/hand_recrop.tflite", data)
    src = zoo.Source("test archive", archive.name, archive.as_uri(), None, {"hand_recrop": "m/hand_recrop.tflite"})
    digests = dict(zoo._digests(), **{archive.name: hashlib.sha256(archive.read_bytes()).hexdigest()})
    monkeypatch.setattr(zoo, "_digests", lambda: digests)
    monkeypatch.setattr(zoo, "SOURCES", (src,))
    monkeypatch.setattr(zoo, "SOURCE_OF", {"hand_recrop": src})
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(zoo, "_search_dirs", lambda: iter([zoo.cache_dir()]))
    assert cli.main(["models", "pull", "hand_recrop"]) == 0
    cached = tmp_path / "cache" / "models" / "hand_recrop.tflite"
    assert cached.read_bytes() == data
    assert capsys.readouterr().out.split() == ["hand_recrop", str(cached)]
