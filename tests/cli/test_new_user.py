"""What a new user hit (issue 24): output paths checked before any work, videos without PyAV,
``python -m gpulite``, exit codes, and summaries that say what they measure."""

from __future__ import annotations

import ctypes.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpulite.cli import main
from tests.cli.support import ASTRONAUT, ROOT, error_lines, gpulite, gradient, write_image, write_video


def _refused(r: subprocess.CompletedProcess, *phrases: str) -> None:
    """Exit 2 with one error line holding ``phrases``, and nothing done (no summary on stdout)."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    errors = error_lines(r.stderr)
    assert len(errors) == 1 and errors[0].startswith("gpulite: error: "), errors
    for p in phrases:
        assert p in errors[0], errors
    assert r.stdout == "", r.stdout


# -- 1. output paths ------------------------------------------------------------------------------
def _unwritable(tmp: Path) -> dict[str, tuple[str, str]]:
    """Output paths that cannot be written -> (the path the message names, why)."""
    blocker = tmp / "a_file"
    blocker.write_text("not a folder")
    return {"proc": ("/proc/gpulite_out", "cannot write files in '/proc'"),
            "file parent": (str(blocker / "sub"), f"'{blocker}' is a file, not a folder")}


def _main(argv: list[str], capsys) -> subprocess.CompletedProcess:
    """``gpulite ARGV`` in this process (faster than a fresh one), as a CompletedProcess."""
    code = main(argv)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


@pytest.mark.parametrize("where", ["proc", "file parent"])
def test_unwritable_outputs_are_refused_before_any_work(tmp_path: Path, where: str, capsys):
    target, why = _unwritable(tmp_path)[where]
    video = write_video(tmp_path / "in.mp4", frames=2)
    image = write_image(tmp_path / "in.png")
    folder = tmp_path / "imgs"
    write_image(folder / "a.png")
    np.save(tmp_path / "x.npy", np.zeros((1, 128, 128, 3), np.float32))
    runs = {
        "detect video": ["detect", "mesh", str(video), "-o", f"{target}.mp4"],
        "detect image": ["detect", "face", str(image), "-o", f"{target}.png"],
        "detect folder": ["detect", "face", str(folder), "-o", f"{target}_dir"],
        "graph run": ["graph", "run", "face_detection", "--input", str(video), "--output", f"{target}.mp4"],
        "demo": ["demo", "-o", f"{target}.png"],
        "run": ["run", "face_detection_short_range", "--input", str(tmp_path / "x.npy"), "-o", f"{target}.npz"],
        "batch": ["batch", "face", str(folder), "-o", f"{target}.parquet"],
        "bench --plot": ["bench", "face_detection_short_range", "--runs", "1", "--plot", f"{target}.png"],
    }
    for what, argv in runs.items():
        r = _main([*argv, "--backend", "cpu"] if what != "bench --plot" else argv, capsys)
        _refused(r, target, why)
        assert "Traceback" not in r.stderr, what


def test_the_input_file_as_the_output_is_refused_and_left_alone(tmp_path: Path, capsys):
    """-o naming the input (or a link to it) replaced the user's photo or video with the drawing,
    the video while it was being read."""
    video = write_video(tmp_path / "in.mp4", frames=2)
    image = write_image(tmp_path / "in.png")
    (tmp_path / "link.png").symlink_to(image)
    np.savez(tmp_path / "x.npz", input=np.zeros((1, 128, 128, 3), np.float32))
    (tmp_path / "list.parquet").write_bytes(b"PAR1 a list of paths")  # refused before it is read
    before = {p: p.read_bytes() for p in (video, image, tmp_path / "x.npz", tmp_path / "list.parquet")}
    runs = {
        "detect video": ["detect", "pose", str(video), "-o", str(video)],
        "detect image": ["detect", "face", str(image), "-o", str(image)],
        "detect, a link": ["detect", "face", str(image), "-o", str(tmp_path / "link.png")],
        "graph run": ["graph", "run", "face_detection", "--input", str(video), "--output", str(video)],
        "demo": ["demo", "--image", str(image), "-o", str(image)],
        "run": ["run", "face_detection_short_range", "--input", str(tmp_path / "x.npz"), "-o", str(tmp_path / "x.npz")],
        "batch": ["batch", "face", str(tmp_path / "list.parquet"), "-o", str(tmp_path / "list.parquet")],
    }
    for what, argv in runs.items():
        r = _main([*argv, "--backend", "cpu"], capsys)
        assert r.returncode == 2, (what, r.stderr)
        assert "is the input file; it would be overwritten" in error_lines(r.stderr)[0], (what, r.stderr)
    assert {p: p.read_bytes() for p in before} == before


def test_an_existing_folder_where_a_file_goes_is_refused(tmp_path: Path):
    (tmp_path / "out.png").mkdir()
    _refused(gpulite("detect", "face", str(write_image(tmp_path / "in.png")), "-o", str(tmp_path / "out.png")),
             "is a folder")


# -- 2. videos without PyAV -----------------------------------------------------------------------
def test_the_readme_video_example_runs_without_pyav(tmp_path: Path):
    """``gpulite detect mesh video.mp4 -o out.mp4`` after ``pip install gpulite`` (no PyAV): OpenCV reads and writes."""
    video = write_video(tmp_path / "video.mp4", frames=4)
    out = tmp_path / "out.mp4"
    r = gpulite("detect", "face", str(video), "-o", str(out), "--no-progress", hide=("av",))
    assert r.returncode == 0, r.stderr
    assert "frames                  4" in r.stdout
    import cv2

    cap = cv2.VideoCapture(str(out))
    n = 0
    while cap.read()[0]:
        n += 1
    cap.release()
    assert n == 4


def test_opencv_reads_the_same_frames_and_timestamps_as_pyav(tmp_path: Path, monkeypatch):
    pytest.importorskip("av")
    from gpulite.pipeline.calculators import sinks, sources
    from tests.solutions.video import make_frames
    from tests.solutions.video import write_video as write_clip

    clip = write_clip(tmp_path / "clip.mp4", make_frames(12), fps=10)  # H.264 through PyAV
    with_av, info_av = list(sources.VideoReader(clip)), sources.video_info(clip)
    monkeypatch.setattr(sources, "pyav", lambda: None)
    monkeypatch.setattr(sinks, "pyav", lambda: None)
    with_cv, info_cv = list(sources.VideoReader(clip)), sources.video_info(clip)
    assert info_cv == info_av
    assert [t for t, _ in with_cv] == [t for t, _ in with_av] == [k * 100_000 for k in range(12)]
    for (_, a), (_, b) in zip(with_av, with_cv, strict=True):
        np.testing.assert_array_equal(a, b)
    with sinks.VideoWriter(tmp_path / "cv.mp4", 10) as w:  # OpenCV's writer: mp4v
        for _, f in with_cv:
            w.write(f)
    back = list(sources.VideoReader(tmp_path / "cv.mp4"))
    assert [t for t, _ in back] == [t for t, _ in with_av]
    assert np.abs(back[5][1].astype(int) - with_cv[5][1]).mean() < 8  # lossy, but the same picture


# -- 4. python -m gpulite ------------------------------------------------------------------------
def test_python_m_gpulite_runs_the_command():
    r = subprocess.run([sys.executable, "-m", "gpulite", "ops", "--summary"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert "builtin ops on cpu" in r.stdout


# -- 5. exit codes --------------------------------------------------------------------------------
def test_a_corrupt_video_is_an_input_error_like_a_corrupt_image(tmp_path: Path):
    bad = tmp_path / "corrupt.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42 but nothing after")
    _refused(gpulite("detect", "face", str(bad)), "corrupt.mp4")
    _refused(gpulite("detect", "face", str(bad), hide=("av",)), "corrupt.mp4")


def test_a_backend_that_is_not_installed_is_an_input_error(tmp_path: Path):
    image = str(write_image(tmp_path / "in.png"))
    r = gpulite("detect", "face", image, "--backend", "litert", hide=("ai_edge_litert",))
    _refused(r, "--backend litert", "ai-edge-litert is not installed")
    r = gpulite("run", "face_detection_short_range", "--input", image, "--backend", "litert",
                hide=("ai_edge_litert",))
    _refused(r, "--backend litert")


def test_bench_of_a_broken_model_exits_2(tmp_path: Path):
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(40))
    r = gpulite("bench", str(broken), "--runs", "1", "--warmup", "1")
    _refused(r, "broken.tflite")


# -- 6. inspect: fused is not folded ---------------------------------------------------------------
def test_inspect_says_which_nodes_were_fused_and_which_computed(capsys):
    assert main(["inspect", "face_detection_short_range"]) == 0
    out = capsys.readouterr().out
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^  (ADD|PAD|DEQUANTIZE|RELU)\s+\d+\s+(.+)$", out, re.M)}
    assert rows["PAD"].startswith("fused into the convolution") and rows["ADD"].startswith("fused into"), rows
    assert rows["RELU"].startswith("fused into") and rows["DEQUANTIZE"].startswith("constant weights"), rows
    assert "computed at" not in rows["ADD"] + rows["PAD"], rows


# -- 8. demo without a face ------------------------------------------------------------------------
def test_demo_without_a_face_does_not_promise_a_close_up(tmp_path: Path, capsys):
    image = write_image(tmp_path / "plain.png", np.kron(gradient(), np.ones((8, 8, 1), np.uint8)))
    assert main(["demo", "--image", str(image), "-o", str(tmp_path / "d.png"), "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "faces      0 found" in out
    assert "close-up of the first face" not in out and "no face was found, so there is no close-up" in out


# -- 9. what the summary measures -----------------------------------------------------------------
def test_detect_says_the_rate_is_the_solutions_and_prints_the_wall_rate(tmp_path: Path, capsys):
    for k in range(3):
        write_image(tmp_path / "in" / f"{k}.png", np.roll(gradient(), k, axis=1))
    assert main(["detect", "face", str(tmp_path / "in"), "--backend", "cpu", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"over 2 frames in the solution \([\d.]+ frames/s for the solution alone\)", out), out
    assert re.search(r"wall clock\s+[\d.]+ frames/s after the first frame \([\d.]+ s for 2 frames: reading, "
                     r"solution, drawing, writing\)", out), out


def test_segment_counts_frames_with_a_person_not_masks(tmp_path: Path, capsys):
    write_image(tmp_path / "in" / "person.png", np.asarray(Image.open(ASTRONAUT).convert("RGB")))
    write_image(tmp_path / "in" / "flat.png", np.full((64, 64, 3), 128, np.uint8))
    assert main(["detect", "segment", str(tmp_path / "in"), "--backend", "cpu", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "masks found" not in out
    assert re.search(r"frames with a person\s+1$", out, re.M), out


def test_pose_output_does_not_draw_the_pose_detectors_box(tmp_path: Path):
    from types import SimpleNamespace

    from gpulite.commands.annotate import draw_result
    from gpulite.solutions import Pose

    rgb = np.asarray(Image.open(ASTRONAUT).convert("RGB"))
    with Pose(static_image_mode=True, backend="cpu") as pose:
        result = pose.process(rgb)
    assert result.pose_detection is not None and result.pose_landmarks is not None
    landmarks_only = SimpleNamespace(pose_landmarks=result.pose_landmarks)
    np.testing.assert_array_equal(draw_result(rgb, result), draw_result(rgb, landmarks_only))


# -- 10. graph run over a folder ---------------------------------------------------------------------
def test_graph_run_on_a_folder_treats_images_as_unrelated_and_keeps_their_names(tmp_path: Path, capsys):
    face = np.asarray(Image.open(ASTRONAUT).convert("RGB"))
    src = tmp_path / "in"
    write_image(src / "a.png", face)
    write_image(src / "b.png", np.ascontiguousarray(np.roll(face, (40, 60), axis=(0, 1))))  # the face moved
    base = ["graph", "run", "face_mesh", "--backend", "cpu", "--no-progress"]
    assert main([*base, "--input", str(src), "--output", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.png", "b.png"]
    assert main([*base, "--input", str(src / "b.png"), "--output", str(tmp_path / "b_alone.png")]) == 0
    with Image.open(tmp_path / "out" / "b.png") as in_folder, Image.open(tmp_path / "b_alone.png") as alone:
        np.testing.assert_array_equal(np.asarray(in_folder), np.asarray(alone))  # not tracked from a.png


def test_graph_run_pose_on_a_video_and_an_image(tmp_path: Path, capsys):
    """The pose graph's own example (`gpulite graph run pose --input video.mp4 ...`) ran only on a
    folder: a video or an image left its smooth_* side packets unset."""
    face = np.asarray(Image.open(ASTRONAUT).convert("RGB"))
    video = write_video(tmp_path / "clip.mp4", frames=2)
    base = ["graph", "run", "pose", "--backend", "cpu", "--no-progress"]
    assert main([*base, "--input", str(video), "--output", str(tmp_path / "out.mp4")]) == 0
    assert main([*base, "--input", str(write_image(tmp_path / "a.png", face)),
                 "--output", str(tmp_path / "out.png")]) == 0
    assert "error" not in capsys.readouterr().err


# -- noise -------------------------------------------------------------------------------------------
@pytest.mark.skipif(ctypes.util.find_library("wayland-client") is None, reason="no libwayland-client to ask")
def test_no_xdg_runtime_dir_complaint_once_the_webgpu_backend_is_imported():
    """libwayland (which Mesa's Vulkan device-select layer asks for a display) prints
    ``XDG_RUNTIME_DIR is invalid or not set`` when the variable is unset; gpulite sets a private one."""
    connect = ("import ctypes, ctypes.util; "
               "ctypes.CDLL(ctypes.util.find_library('wayland-client')).wl_display_connect(None)")
    fixed = ("import os, stat, gpulite.backends.webgpu; d = os.environ['XDG_RUNTIME_DIR']; "
             "assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d; " + connect)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", fixed], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "XDG_RUNTIME_DIR" not in r.stderr, r.stderr
    bare = subprocess.run([sys.executable, "-c", connect], env=env, capture_output=True, text=True, timeout=120)
    assert "XDG_RUNTIME_DIR" in bare.stderr, "without gpulite the message comes: the check can see it"


def test_a_runtime_dir_that_is_set_is_left_alone(monkeypatch, tmp_path: Path):
    from gpulite.backends.webgpu import runtime_dir

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert runtime_dir.ensure() is None and os.environ["XDG_RUNTIME_DIR"] == str(tmp_path)
