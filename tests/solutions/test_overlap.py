"""Overlap: frame N+1's GPU work is queued before frame N's results are read back
(``Solution.process_video``, ``GraphSession.feed``/``collect``, the scheduler's order), with the
results of the frame-by-frame path, every frame once and in order, and a flow limiter that still
drops as MediaPipe's does. Counted (the order of submits and readbacks), not timed."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pytest

from gpulite.pipeline import Calculator, Graph, register_calculator
from tests.solutions.video import make_frames
from tests.webgpu.support import adapter_problem

FRAMES = 6


@pytest.fixture(scope="module")
def frames() -> list[np.ndarray]:
    return make_frames(FRAMES)


def _webgpu() -> None:
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)


class EventLog:
    """Records, in order, each node call (name, frame timestamp), each queue submit and each readback
    (bytes read back), each tagged with the timestamp of the node call it happened in."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import gpulite.pipeline.scheduler as scheduler
        from gpulite.backends.webgpu import device
        from gpulite.backends.webgpu.pipeline import common

        self.events: list[tuple[str, str, int | None]] = []
        self.ts: int | None = None
        call, count, add = scheduler.Run._call, device.CountedQueue.count, common.TransferCounters.add

        def logged_call(run: Any, node: Any, phase: str, ts: int | None) -> Any:
            self.ts = ts
            self.events.append(("call", node.name, ts))
            return call(run, node, phase, ts)

        def logged_submit(queue: Any) -> None:  # every submit is counted, whoever makes it
            self.events.append(("submit", "", self.ts))
            count(queue)

        def logged_add(counters: Any, uploaded: int = 0, read_back: int = 0) -> None:
            if read_back:
                self.events.append(("read", "", self.ts))
            add(counters, uploaded, read_back)

        monkeypatch.setattr(scheduler.Run, "_call", logged_call)
        monkeypatch.setattr(device.CountedQueue, "count", logged_submit)
        monkeypatch.setattr(common.TransferCounters, "add", logged_add)

    def first(self, kind: str, ts: int, node: str = "") -> int:
        return next(i for i, e in enumerate(self.events) if e[0] == kind and e[2] == ts and (not node or e[1] == node))


def _same(a: Any, b: Any) -> None:
    """Two results equal field by field (arrays exactly)."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        else:
            assert repr(x) == repr(y), f.name


def test_face_detector_video_overlaps_and_matches_frame_by_frame(frames, monkeypatch):
    _webgpu()
    from gpulite.solutions import FaceDetector

    with FaceDetector(backend="webgpu") as fd:
        one_by_one = [fd.process(f) for f in frames]
        fd.reset()
        log = EventLog(monkeypatch)
        stamps, overlapped = [], []
        for r in fd.process_video(frames):
            overlapped.append(r)
            stamps.append(fd.timestamp_us)
            assert fd.last_transfers["submits"] > 0
        assert fd.frames == FRAMES
    assert len(overlapped) == FRAMES                       # every frame once, in order
    for k, (a, b) in enumerate(zip(one_by_one, overlapped, strict=True)):
        assert a.detections, k
        _same(a, b)
    ts = [33333 * (k + 1) for k in range(FRAMES)]
    # frame N+1's model is queued (submitted) before frame N's detections are read back
    overlaps = sum(log.first("submit", ts[k + 1]) < log.first("read", ts[k]) for k in range(FRAMES - 1))
    assert overlaps == FRAMES - 1, log.events
    # and frame N's results are all read before frame N+1's (no frame jumps the queue)
    assert all(log.first("read", ts[k]) < log.first("read", ts[k + 1]) for k in range(FRAMES - 1))


def test_face_mesh_video_tracks_as_frame_by_frame(frames):
    """Tracked: frame N+1's region comes from frame N's landmarks, so the graph orders them; the
    results are those of process() frame by frame, timestamps given."""
    _webgpu()
    from gpulite.solutions import FaceMesh

    times = [100.0 * k for k in range(FRAMES)]
    with FaceMesh(backend="webgpu") as mesh:
        one_by_one = [mesh.process(f, t) for f, t in zip(frames, times, strict=True)]
        mesh.reset()
        overlapped = list(mesh.process_video(frames, times))
    assert sum(r.tracked for r in overlapped) >= FRAMES - 2
    for a, b in zip(one_by_one, overlapped, strict=True):
        _same(a, b)


def test_process_video_checks_its_input(frames):
    from gpulite.solutions import FaceDetector
    from gpulite.solutions.base import ImageError, TimestampOrderError

    with FaceDetector(backend="cpu") as fd:
        with pytest.raises(ValueError, match="timestamps_ms ran out"):
            list(fd.process_video(frames[:2], [0.0]))
        fd.reset()
        with pytest.raises(TimestampOrderError):
            list(fd.process_video(frames[:2], [5.0, 5.0]))
        fd.reset()
        with pytest.raises(ImageError, match="process_video"):
            list(fd.process_video([frames[0], frames[0][..., :1]]))


# -- a flow-limited stream with double buffering --------------------------------------------------
ORDER: list[tuple[str, int]] = []


@register_calculator
class TestGpuQueue(Calculator):
    """Stands for a GPU submit: records it, passes the frame on (runs first: queues_only)."""

    inputs: ClassVar[dict[str, Any]] = {"IN": Any}
    outputs: ClassVar[dict[str, Any]] = {"OUT": Any}
    queues_only = True

    def process(self, cc: Any) -> None:
        ORDER.append(("submit", cc.timestamp))
        cc.output("OUT", cc.inputs["IN"])


@register_calculator
class TestGpuRead(Calculator):
    """Stands for a readback: records it, passes the frame on."""

    inputs: ClassVar[dict[str, Any]] = {"IN": Any}
    outputs: ClassVar[dict[str, Any]] = {"OUT": Any}

    def process(self, cc: Any) -> None:
        ORDER.append(("read", cc.timestamp))
        cc.output("OUT", cc.inputs["IN"])


STREAM_YAML = """
input_stream: "IMAGE:frames"
output_stream: "OUT:done"
num_threads: 0
node:
  - calculator: FlowLimiter
    name: limiter
    input_stream: ["IN:frames", "FINISHED:done"]
    input_stream_info: {FINISHED: {back_edge: true}}
    output_stream: ["OUT:throttled", "ALLOW:allowed"]
    options: {max_in_flight: 2}
  - {calculator: TestGpuQueue, name: submit, input_stream: "IN:throttled", output_stream: "OUT:queued"}
  - {calculator: TestGpuRead, name: read, input_stream: "IN:queued", output_stream: "OUT:done"}
"""


def test_flow_limited_stream_double_buffers_and_drops_as_mediapipe():
    """Two frames in flight (max_in_flight 2): a camera's frames 0-2 arrive before anything ran,
    so 0 and 1 pass and 2 is dropped (MediaPipe's FlowLimiterCalculator); frame 1 is queued
    before frame 0 is read; once 0 is done, frame 3 passes; each passed frame comes out once."""
    ORDER.clear()
    g = Graph.from_config(STREAM_YAML)
    done, allowed = [], []
    g.observe("done", done.append)
    g.observe("allowed", lambda p: allowed.append((p.timestamp, p.payload)))
    g.start()
    for t in range(3):
        g.add_packet("frames", f"f{t}", timestamp=t)
    g.wait_for(["done"], 0)
    assert ORDER[:3] == [("submit", 0), ("submit", 1), ("read", 0)]
    g.add_packet("frames", "f3", timestamp=3)
    g.wait_for(["done"], 3)
    g.close()
    assert [p.payload for p in done] == ["f0", "f1", "f3"]
    assert allowed == [(0, True), (1, True), (2, False), (3, True)]
    assert g.stats()["limiter"].dropped == 1
    assert sorted(ORDER) == sorted(set(ORDER)) and len(ORDER) == 6


# -- a tracked frame's trip: submits and readbacks -------------------------------------------------
@pytest.mark.parametrize("name, kwargs, submits, reads, down", [
    # frame upload + warp, the landmark model's invoke with its readback (flag and mesh in one: 5.5 KiB)
    ("FaceMesh", {}, 2, 1, 6 * 1024),
    # upload + warp, invoke, the model's mask kept on the GPU while the rest comes back with the
    # heatmap's window sums (one submit, 2.4 KiB: no 624 KiB heatmap), the mask's projection (its
    # smoothing blends nothing at MediaPipe's measured ratio 0: no dispatch)
    ("Pose", {"enable_segmentation": True}, 4, 1, 3 * 1024),
])
def test_a_tracked_frame_needs_no_extra_round_trip(name, kwargs, submits, reads, down, frames, monkeypatch):
    """The next frame's region comes from landmarks already read back: a tracked frame makes one
    small readback, whatever the number of model outputs."""
    _webgpu()
    from gpulite import solutions

    with getattr(solutions, name)(backend="webgpu", **kwargs) as sol:
        sol.process(frames[0])
        log = EventLog(monkeypatch)
        for f in frames[1:3]:
            log.events.clear()
            r = sol.process(f)
            assert r.tracked
            got = [e[0] for e in log.events if e[0] != "call"]
            assert (got.count("submit"), got.count("read")) == (submits, reads), log.events
            assert sol.last_transfers["submits"] == submits
            assert 0 < sol.last_transfers["bytes_read_back"] <= down, sol.last_transfers


def test_get_plan_reports_what_a_frame_moves(frames):
    """get_plan(): the graph's nodes and, on webgpu, bytes up, bytes down and submits per frame
    (the mean after the first frame, which compiles and uploads constants)."""
    _webgpu()
    from gpulite.solutions import FaceMesh

    with FaceMesh(backend="webgpu") as mesh:
        assert mesh.get_plan()["per_frame"] is None
        per = []
        for f in frames[:4]:
            mesh.process(f)
            per.append(dict(mesh.last_transfers))
        plan = mesh.get_plan()
    assert plan["backend"] == "webgpu" and plan["nodes"]["landmark_inference"] == "Inference"
    want = {k: sum(p[k] for p in per[1:]) / 3 for k in per[0]}
    assert plan["per_frame"] == {**want, "frames": 3}
    assert plan["per_frame"]["bytes_uploaded"] >= frames[0].nbytes and plan["per_frame"]["submits"] >= 2
    assert plan["last_frame"] == per[-1]
    with FaceMesh(backend="cpu") as mesh:
        mesh.process(frames[0])
        assert "per_frame" not in mesh.get_plan()


def test_a_frame_is_uploaded_once_however_many_regions_warp_it():
    """Hands at low thresholds runs its landmark model on two regions of the photo in a 4-frame clip
    (no hand passes it): the palm detector and each region warp the same frame, uploaded once (a
    SharedFrame's GPU copy)."""
    _webgpu()
    frames = make_frames(4)
    from gpulite.solutions import Hands

    with Hands(backend="webgpu", min_detection_confidence=0.05, min_tracking_confidence=0.05) as hands:
        found = []
        for f in frames:
            found.append(len(hands.process(f).hand_rects))
            # (+ a model's constants at its first run); once per region would be 2-3x the frame
            assert f.nbytes <= hands.last_transfers["bytes_uploaded"] < 1.5 * f.nbytes, hands.last_transfers
    assert max(found) == 2, found
