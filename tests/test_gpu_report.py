"""benchmarks/gpu_report.py makes its tables on lavapipe too (the GPU machine's report is the
same code): a smoke test of the latency, batch and profile tables on one small model."""

from __future__ import annotations

import re

import pytest

from tests.assets import benchmark
from tests.webgpu.support import adapter_problem

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(adapter_problem() is not None, reason=adapter_problem() or "")]


def test_tables_on_one_model():
    rep = benchmark("gpu_report")
    zoo_rows = rep.zoo_table(["face_detection_short_range"], runs=1)
    row = next(r for r in zoo_rows if r.startswith("| face_detection_short_range"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "0.062"  # GFLOP from the shapes
    assert float(cells[-1]) <= 1e-3  # webgpu error against LiteRT
    assert all(re.fullmatch(r"[\d.]+", c) for c in cells[2:6])
    batch_rows = rep.batch_table(["face_detection_short_range"], [1, 2], runs=1)
    assert [r.split("|")[2].strip() for r in batch_rows[2:]] == ["1", "2"]
    prof = rep.profile_tables(["face_detection_short_range"], top=3, runs=1)
    assert prof[0].startswith("### face_detection_short_range on webgpu")
    assert sum(line.startswith("| ") for line in prof[0].splitlines()) == 1 + 3 + 1  # header, rows, total
