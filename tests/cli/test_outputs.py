"""Inputs and outputs of ``gpulite detect`` and ``gpulite graph run`` (issue 11's CLI defects).

A folder's unreadable image is skipped and reported, and the run goes on and exits 2; ``-o``
writes the format its extension names and is refused, before any frame is processed, when it
does not fit the input; a folder's ``x.png`` and ``x.jpg`` give two output files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpulite.cli import main
from tests.cli.support import error_lines, gpulite, gradient, write_image, write_video


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    write_image(src / "a.png")
    (src / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n this is not a real PNG")  # corrupt
    write_image(src / "c.jpg", gradient()[::-1].copy())
    return src


def test_detect_skips_a_corrupt_image_in_a_folder_reports_it_and_exits_2(tmp_path: Path):
    src = _folder(tmp_path)
    r = gpulite("detect", "face", str(src), "-o", str(tmp_path / "out"), "--no-progress")
    assert r.returncode == 2, r.stderr
    errors = error_lines(r.stderr)
    assert len(errors) == 1 and errors[0].startswith("gpulite: skipped: ") and "b.png" in errors[0], errors
    assert "cannot" in errors[0], "the line says why"
    assert "Traceback" not in r.stderr
    assert "frames                  2 (1 unreadable skipped)" in r.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.png", "c.jpg"]


def test_graph_run_skips_a_corrupt_image_in_a_folder_and_exits_2(tmp_path: Path, capsys):
    src = _folder(tmp_path)
    assert main(["graph", "run", "face_detection", "--input", str(src), "--output", str(tmp_path / "frames"),
                 "--backend", "cpu", "--no-progress"]) == 2
    captured = capsys.readouterr()
    errors = error_lines(captured.err)
    assert len(errors) == 1 and "b.png" in errors[0] and errors[0].startswith("gpulite: skipped: "), errors
    assert "frames     2 in, 2 out" in captured.out and "skipped    1 unreadable image(s)" in captured.out
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["a.png", "c.jpg"]  # named as the inputs


@pytest.mark.parametrize(("name", "fmt"), [("out.jpg", "JPEG"), ("out.png", "PNG"), ("sub/out.webp", "WEBP")])
def test_detect_output_format_follows_the_extension(tmp_path: Path, capsys, name: str, fmt: str):
    src = write_image(tmp_path / "in.png")
    out = tmp_path / name
    assert main(["detect", "face", str(src), "-o", str(out), "--backend", "cpu", "--no-progress"]) == 0
    with Image.open(out) as im:
        assert im.format == fmt and im.size == (32, 24)


def test_graph_run_image_output_format_follows_the_extension(tmp_path: Path, capsys):
    src = write_image(tmp_path / "in.png")
    out = tmp_path / "out.jpg"
    assert main(["graph", "run", "face_detection", "--input", str(src), "--output", str(out),
                 "--backend", "cpu", "--no-progress"]) == 0
    with Image.open(out) as im:
        assert im.format == "JPEG" and im.size == (32, 24)


def test_demo_output_format_follows_the_extension_and_refuses_others(tmp_path: Path, capsys):
    assert main(["demo", "--image", str(write_image(tmp_path / "in.png")), "-o", str(tmp_path / "d.jpg"),
                 "--backend", "cpu"]) == 0
    with Image.open(tmp_path / "d.jpg") as im:
        assert im.format == "JPEG"
    capsys.readouterr()
    assert main(["demo", "-o", str(tmp_path / "d.gif"), "--backend", "cpu"]) == 2
    captured = capsys.readouterr()
    assert "unsupported image extension '.gif'" in captured.err and captured.out == ""


def _refused(r, *phrases: str) -> None:
    """Exit 2, one error line with ``phrases``, and nothing processed (no summary, no progress)."""
    assert r.returncode == 2, r.stderr
    errors = error_lines(r.stderr)
    assert len(errors) == 1 and errors[0].startswith("gpulite: error: "), errors
    for p in phrases:
        assert p in errors[0], errors
    assert r.stdout == "" and " fps" not in r.stderr  # no summary, no progress bar


def test_unsupported_output_extension_is_an_input_error_up_front(tmp_path: Path):
    src = write_image(tmp_path / "in.png")
    r = gpulite("detect", "face", str(src), "-o", str(tmp_path / "out.xyz"))
    _refused(r, "out.xyz", "an image input needs an image file", "'.xyz'")
    assert not (tmp_path / "out.xyz").exists()


def test_video_input_with_a_png_output_is_refused_before_processing(tmp_path: Path):
    video = write_video(tmp_path / "in.mp4")
    for args in (["detect", "face", str(video), "-o", str(tmp_path / "x.png")],
                 ["graph", "run", "face_detection", "--input", str(video), "--output", str(tmp_path / "x.png")]):
        _refused(gpulite(*args), "a video input needs a video file")
    assert not (tmp_path / "x.png").exists()


def test_folder_input_with_a_single_file_output_is_refused(tmp_path: Path):
    src = _folder(tmp_path)
    for args in (["detect", "face", str(src), "-o", str(tmp_path / "single.png")],
                 ["graph", "run", "face_detection", "--input", str(src), "--output", str(tmp_path / "single.png")]):
        _refused(gpulite(*args), "a folder input needs an output folder")
    assert not (tmp_path / "single.png").exists()
    _refused(gpulite("detect", "face", str(src), "-o", str(src)), "is the input folder")


def test_same_stem_images_in_a_folder_do_not_overwrite_each_other(tmp_path: Path, capsys):
    src = tmp_path / "in"
    png, jpg = gradient(), np.ascontiguousarray(gradient()[:, ::-1])
    write_image(src / "x.png", png)
    write_image(src / "x.jpg", jpg)
    out = tmp_path / "out"
    assert main(["detect", "face", str(src), "-o", str(out), "--backend", "cpu", "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["x.jpg", "x.png"]
    with Image.open(out / "x.png") as a, Image.open(out / "x.jpg") as b:
        assert a.format == "PNG" and b.format == "JPEG"
        np.testing.assert_array_equal(np.asarray(a.convert("RGB")), png)  # no face: the frame as it came
        assert np.abs(np.asarray(b.convert("RGB")).astype(int) - jpg).mean() < 8  # JPEG is lossy
