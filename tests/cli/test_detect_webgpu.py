"""``gpulite detect`` on webgpu reports what each frame moved between host and GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulite.cli import main
from tests.solutions.video import make_frames, write_video
from tests.webgpu.support import adapter_problem


def test_detect_on_webgpu_prints_bytes_and_submits_per_frame(tmp_path: Path, capsys):
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    clip = write_video(tmp_path / "clip.mp4", make_frames(3), fps=10)
    assert main(["detect", "mesh", str(clip), "--backend", "webgpu", "--no-progress",
                 "-o", str(tmp_path / "out.mp4")]) == 0
    out = capsys.readouterr().out
    m = re.search(r"host<->GPU\s+median per frame after the first: ([\d.]+) KiB up, ([\d.]+) KiB down, (\d+) submits",
                  out)
    assert m, out
    up, down, submits = float(m[1]), float(m[2]), int(m[3])
    assert 640 * 480 * 3 / 1024 <= up <= 640 * 480 * 3 / 1024 + 1  # one frame up (tracked: no detector)
    assert 0 < down <= 16 and 1 <= submits <= 5
