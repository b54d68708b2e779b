"""Per-frame and per-call timings never include the first call (start-up), which is shown apart.

Each test makes the first call slow on purpose (a sleep) and checks that the per-frame figures
stay fast while the first-call figure carries the sleep.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from gpulite.cli import main
from gpulite.commands.common import CallTimes
from tests.cli.support import gradient, write_image

SLEEP_S = 0.5


def _slow_first(cls, name: str, monkeypatch) -> None:
    """``cls.name`` sleeps SLEEP_S on its first call in this test."""
    real, calls = getattr(cls, name), []

    def wrapper(self, *args, **kwargs):
        if not calls:
            time.sleep(SLEEP_S)
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, wrapper)


def _folder(tmp: Path, n: int = 4) -> Path:
    for k in range(n):
        write_image(tmp / "in" / f"{k}.png", np.roll(gradient(), k, axis=1))
    return tmp / "in"


def test_call_times_keep_the_first_call_apart():
    t = CallTimes()
    for ms, stage in ((500.0, 400.0), (10.0, 8.0), (12.0, 9.0), (11.0, 7.0)):
        t.add(ms, {"inference": stage})
    assert t.first_ms == 500.0 and t.first_stages == {"inference": 400.0}
    assert t.median == 11.0 and t.mean == 11.0 and t.stage_medians() == {"inference": 8.0}
    assert t.summary() == "first 500.0 ms; then median 11.00 ms, mean 11.00 ms over 3 calls"
    one = CallTimes()
    one.add(7.0)
    assert one.median is None and one.mean is None and "no per-call figures" in one.summary()


def test_detect_per_frame_figures_leave_the_first_frame_out(tmp_path: Path, monkeypatch, capsys):
    from gpulite.solutions import FaceDetector

    _slow_first(FaceDetector, "process", monkeypatch)
    assert main(["detect", "face", str(_folder(tmp_path)), "--backend", "cpu", "--no-progress"]) == 0
    text = capsys.readouterr().out
    first = float(re.search(r"first frame\s+([\d.]+) ms", text).group(1))
    median, mean, n = re.search(r"median ([\d.]+) ms, mean ([\d.]+) ms per frame over (\d+) frames", text).groups()
    assert first >= SLEEP_S * 1e3 and int(n) == 3
    assert float(median) < SLEEP_S * 1e3 / 2 and float(mean) < SLEEP_S * 1e3 / 2, text


def test_run_per_call_figures_leave_the_first_invoke_out(tmp_path: Path, monkeypatch, capsys):
    from gpulite.interpreter import Interpreter

    _slow_first(Interpreter, "invoke", monkeypatch)
    np.save(tmp_path / "x.npy", np.zeros((1, 128, 128, 3), np.float32))
    assert main(["run", "face_detection_short_range", "--input", str(tmp_path / "x.npy"), "--backend", "cpu",
                 "--runs", "4"]) == 0
    first, median, mean, n = re.search(r"invoke     first ([\d.]+) ms; then median ([\d.]+) ms, mean ([\d.]+) ms "
                                       r"over (\d+) calls", capsys.readouterr().out).groups()
    assert float(first) >= SLEEP_S * 1e3 and int(n) == 3
    assert float(median) < SLEEP_S * 1e3 / 2 and float(mean) < SLEEP_S * 1e3 / 2


def test_graph_run_per_frame_figures_leave_the_first_frame_out(tmp_path: Path, monkeypatch, capsys):
    from gpulite.pipeline.calculators.image_to_tensor import ImageToTensor

    _slow_first(ImageToTensor, "process", monkeypatch)
    assert main(["graph", "run", "face_detection", "--input", str(_folder(tmp_path)), "--backend", "cpu",
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    seconds, fps, first = re.search(r"time\s+([\d.]+) s, ([\d.]+) frames/s after the first frame "
                                    r"\(start-up [\d.]+ s, first frame (\d+) ms\)", text).groups()
    assert int(first) >= SLEEP_S * 1e3 and float(seconds) < SLEEP_S and float(fps) > 3 / SLEEP_S, text
    node_ms = float(re.search(r"per node\s+.*?ImageToTensor ([\d.]+) ms", text).group(1))
    assert node_ms < SLEEP_S * 1e3 / 5, text  # with the first frame it would be over SLEEP_S / 4
