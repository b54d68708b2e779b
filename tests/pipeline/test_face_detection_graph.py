"""Acceptance: the shipped BlazeFace graph against MediaPipe 0.10.14's own face detection solution.

On astronaut.png both backends must find exactly one face whose box has IoU >= 0.9 with
MediaPipe's and whose score is within 0.02 of MediaPipe's. On webgpu the graph must move at
most the frame's bytes + 4 KiB between host and GPU per frame (counted by the pipeline's
transfer counters, which the Inference calculator feeds with its interpreter's traffic).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpulite.cli import main as cli_main
from gpulite.pipeline.calculators.sinks import VideoWriter
from gpulite.pipeline.calculators.sources import VideoReader
from gpulite.pipeline.calculators.types import Detection, RelativeBox
from gpulite.pipeline.graphs import available_graphs, load_graph
from tests.assets import image_path
from tests.webgpu.support import adapter_problem

# mediapipe 0.10.14 calls a protobuf API that newer protobuf deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:SymbolDatabase.GetPrototype:UserWarning")


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return np.asarray(Image.open(image_path("astronaut.png")).convert("RGB"))


@pytest.fixture(scope="module")
def mediapipe_faces():
    """MediaPipe's detections of a list of RGB frames: [(score, RelativeBox), ...] per frame."""
    import mediapipe as mp

    fd = mp.solutions.face_detection.FaceDetection(model_selection=0)

    def faces(frames: list[np.ndarray]) -> list[list[tuple[float, RelativeBox]]]:
        out = []
        for f in frames:
            dets = fd.process(f).detections or []
            out.append([(d.score[0], RelativeBox(b.xmin, b.ymin, b.width, b.height))
                        for d in dets for b in [d.location_data.relative_bounding_box]])
        return out

    yield faces
    fd.close()


def run_graph(frames: list[np.ndarray], backend: str, on_frame=None) -> list[list[Detection]]:
    """Detections per frame. With ``on_frame``, frames go in one at a time (each after the previous
    one's detections came out) and ``on_frame(i)`` runs between them."""
    g = load_graph("face_detection", backend=backend)
    out: dict[int, list[Detection]] = {}
    g.observe("detections", lambda p: out.__setitem__(p.timestamp, p.payload))
    for i, f in enumerate(frames):
        g.add_packet("image", f, timestamp=i)
        if on_frame is not None:
            deadline = time.monotonic() + 60
            while i not in out:
                assert time.monotonic() < deadline, f"no detections for frame {i} within 60 s"
                time.sleep(0.001)
            on_frame(i)
    g.close()
    return [out[i] for i in range(len(frames))]


def check_against_mediapipe(ours: list[Detection], theirs: list[tuple[float, RelativeBox]]) -> None:
    assert len(ours) == len(theirs), f"gpulite found {len(ours)} faces, MediaPipe {len(theirs)}"
    for d in ours:
        score, box = max(theirs, key=lambda t: d.box.iou(t[1]))
        assert d.box.iou(box) >= 0.9, f"IoU {d.box.iou(box):.4f}: {d.box} vs MediaPipe {box}"
        assert abs(d.score - score) <= 0.02, f"score {d.score:.4f} vs MediaPipe {score:.4f}"


def needs_gpu() -> None:
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)


def test_the_graph_ships_with_the_package():
    assert "face_detection" in available_graphs()


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_astronaut_matches_mediapipe(backend, astronaut, mediapipe_faces):
    if backend == "webgpu":
        needs_gpu()
    (ours,) = run_graph([astronaut], backend)
    (theirs,) = mediapipe_faces([astronaut])
    assert len(theirs) == 1
    check_against_mediapipe(ours, theirs)


def _frames(n: int = 6) -> list[np.ndarray]:
    """640x480 letterboxed frames: the photo at several sizes and places (non-integer scales)."""
    src = Image.open(image_path("astronaut.png")).convert("RGB")
    frames = []
    for k in range(n):
        side = int(480 * (1.0 + 0.12 * k))
        cx, cy = 320 + 90 * math.sin(k), 190 + 25 * math.cos(k)
        canvas = Image.new("RGB", (640, 480), (90, 90, 90))
        canvas.paste(src.resize((side, side), Image.BILINEAR), (int(cx - 0.44 * side), int(cy - 0.25 * side)))
        frames.append(np.asarray(canvas))
    return frames


def test_letterboxed_frames_match_mediapipe_on_cpu(mediapipe_faces):
    frames = _frames()
    for ours, theirs in zip(run_graph(frames, "cpu"), mediapipe_faces(frames), strict=True):
        assert theirs, "MediaPipe should see the face in every frame"
        check_against_mediapipe(ours, theirs)


def test_webgpu_moves_at_most_the_frame_plus_4_kib_per_frame(astronaut, mediapipe_faces):
    needs_gpu()
    from gpulite.backends.webgpu.pipeline import transfer_stats

    frames = [astronaut, *_frames(4)]
    marks: dict[int, dict[str, int]] = {}
    results = run_graph(frames, "webgpu", on_frame=lambda ts: marks.__setitem__(ts, transfer_stats()))
    for ours, theirs in zip(results, mediapipe_faces(frames), strict=True):
        check_against_mediapipe(ours, theirs)
    # Frame 0 pays one-time uploads (anchors, uniforms) and frame 1 a new frame size. Frames 2..4
    # are 640x480 like frame 1: each must move its 921,600 bytes up once and almost nothing else.
    frame_bytes = 640 * 480 * 3
    for ts in range(2, len(frames)):
        up = marks[ts]["bytes_uploaded"] - marks[ts - 1]["bytes_uploaded"]
        down = marks[ts]["bytes_read_back"] - marks[ts - 1]["bytes_read_back"]
        assert frame_bytes <= up + down <= frame_bytes + 4096, (ts, up, down)
        assert up >= frame_bytes, "the frame must go up to the GPU (else webgpu was not used)"
        assert 0 < down < 4096, "only the candidate detections come back, never the 57 KiB of regressors"


def test_cli_graph_run_writes_an_annotated_video(tmp_path: Path, capsys):
    video = tmp_path / "in.mp4"
    with VideoWriter(video, fps=10) as w:
        for f in _frames(4):
            w.write(f)
    out = tmp_path / "out.mp4"
    status = cli_main(["graph", "run", "face_detection", "--input", str(video), "--output", str(out),
                       "--backend", "cpu", "--no-progress"])
    assert status == 0
    text = capsys.readouterr().out
    assert "frames     4 in, 4 out, 0 dropped" in text and "frames/s" in text
    with VideoReader(out) as r:
        frames = [f for _, f in r]
    assert len(frames) == 4 and frames[0].shape == (480, 640, 3)
    green = (frames[0][..., 1] > 200) & (frames[0][..., 0] < 80) & (frames[0][..., 2] < 80)
    assert green.sum() > 100, "the face box should be drawn"
