"""``gpulite detect`` options: ``--refine``, ``--max-num``, ``--min-confidence``, ``--model``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpulite.cli import main
from gpulite.solutions import FaceDetector
from tests.cli.support import ASTRONAUT, write_image


def _json(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _two_faces(tmp: Path) -> Path:
    """The astronaut's face and its mirror image side by side, at the scale the short-range model likes."""
    with Image.open(ASTRONAUT) as im:
        face = np.asarray(im.convert("RGB"))[1:161, 60:220]
    canvas = np.full((320, 320, 3), 128, np.uint8)
    canvas[80:240, :160], canvas[80:240, 160:] = face, face[:, ::-1]
    return write_image(tmp / "two.png", canvas)


def test_refine_gives_478_landmarks_with_irises(capsys):
    base = ["detect", "mesh", str(ASTRONAUT), "--backend", "cpu", "--json", "--no-progress"]
    assert main(base) == 0
    assert [len(f["landmark"]) for f in _json(capsys)[0]["result"]["multi_face_landmarks"]] == [468]
    assert main([*base, "--refine"]) == 0
    assert [len(f["landmark"]) for f in _json(capsys)[0]["result"]["multi_face_landmarks"]] == [478]


def test_max_num_keeps_the_best_faces(tmp_path: Path, capsys):
    src = _two_faces(tmp_path)
    base = ["detect", "face", str(src), "--backend", "cpu", "--json", "--no-progress"]
    assert main(base) == 0
    both = _json(capsys)[0]["result"]["detections"]
    assert len(both) == 2
    assert main([*base, "--max-num", "1"]) == 0
    one = _json(capsys)[0]["result"]["detections"]
    assert len(one) == 1 and one[0]["score"] == max(d["score"] for d in both)
    assert main(["detect", "mesh", str(src), "--backend", "cpu", "--json", "--no-progress", "--max-num", "2"]) == 0
    assert len(_json(capsys)[0]["result"]["multi_face_landmarks"]) == 2  # FaceMesh's default is 1


def test_min_confidence_drops_weaker_detections(capsys):
    base = ["detect", "face", str(ASTRONAUT), "--backend", "cpu", "--json", "--no-progress"]
    assert main(base) == 0
    score = _json(capsys)[0]["result"]["detections"][0]["score"]
    assert main([*base, "--min-confidence", f"{min(score + 0.01, 1.0):.3f}"]) == 0
    assert not _json(capsys)[0]["result"]["detections"]
    assert main([*base, "--min-confidence", f"{score - 0.01:.3f}"]) == 0
    assert len(_json(capsys)[0]["result"]["detections"]) == 1


def test_model_full_runs_the_full_range_detector(capsys):
    with Image.open(ASTRONAUT) as im:
        rgb = np.asarray(im.convert("RGB"))
    with FaceDetector(model="full", backend="cpu") as fd:
        want = fd.process(rgb).detections
    with FaceDetector(model="short", backend="cpu") as fd:
        short = fd.process(rgb).detections
    assert main(["detect", "face", str(ASTRONAUT), "--model", "full", "--backend", "cpu", "--json",
                 "--no-progress"]) == 0
    got = _json(capsys)[0]["result"]["detections"]
    assert len(got) == len(want) == 1
    assert got[0]["score"] == pytest.approx(float(want[0].score), abs=1e-6)
    assert abs(want[0].score - short[0].score) > 1e-3, "the two models must be told apart"


@pytest.mark.parametrize(("argv", "message"), [
    (["mesh", "--model", "full"], "--model applies to face, not to mesh"),
    (["segment", "--min-confidence", "0.5"], "--min-confidence applies to face, mesh, hands, pose, not to segment"),
    (["pose", "--max-num", "2"], "--max-num applies to face, mesh, hands, not to pose"),
    (["hands", "--max-num", "0"], "--max-num must be at least 1, got 0"),
    (["face", "--min-confidence", "1.5"], "--min-confidence must be in [0, 1], got 1.5"),
])
def test_options_that_do_not_fit_are_input_errors(tmp_path: Path, capsys, argv: list[str], message: str):
    src = write_image(tmp_path / "in.png")
    assert main(["detect", argv[0], str(src), *argv[1:]]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1] == f"gpulite: error: {message}" and captured.out == ""
