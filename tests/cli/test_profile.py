"""``gpulite profile``: per-node times that add up, FLOPs from the shapes, both timing methods."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.cli import main
from gpulite.commands.profile import profile_model
from gpulite.graph.cost import bytes_moved, flops
from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import adapter_problem

needs_gpu = pytest.mark.skipif(adapter_problem() is not None, reason=adapter_problem() or "")


def _conv_fc_model(tmp_path):
    """CONV_2D 3x3 (8 -> 16 channels, SAME) on 1x10x12x8, then FULLY_CONNECTED 1920 -> 5."""
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    x = mb.input("x", (1, 10, 12, 8), np.float32)
    c = mb.tensor("c", (1, 10, 12, 16), np.float32)
    mb.op("CONV_2D", [x, mb.const("w", rng.standard_normal((16, 3, 3, 8)).astype(np.float32)),
                      mb.const("b", np.zeros(16, np.float32))], [c], padding="SAME", stride_h=1, stride_w=1)
    r = mb.tensor("r", (1, 1920), np.float32)
    mb.op("RESHAPE", [c, mb.const("s", np.array([-1, 1920], np.int32))], [r])
    y = mb.tensor("y", (1, 5), np.float32)
    mb.op("FULLY_CONNECTED", [r, mb.const("fw", rng.standard_normal((5, 1920)).astype(np.float32)),
                              mb.const("fb", np.zeros(5, np.float32))], [y])
    mb.output(y)
    path = tmp_path / "conv_fc.tflite"
    path.write_bytes(mb.build())
    return path


def test_cost_counts_multiply_adds_twice(tmp_path):
    it = Interpreter(model_path=str(_conv_fc_model(tmp_path)), backend="cpu")
    it.allocate_tensors()
    g = it.graph
    by_op = {str(n.op): n for n in g.nodes}
    assert flops(g, by_op["CONV_2D"]) == 2 * (10 * 12 * 16) * (3 * 3 * 8)
    assert flops(g, by_op["FULLY_CONNECTED"]) == 2 * 5 * 1920
    assert flops(g, by_op["RESHAPE"]) == 0
    conv_bytes = 4 * (10 * 12 * 8 + 16 * 3 * 3 * 8 + 16 + 10 * 12 * 16)
    assert bytes_moved(g, by_op["CONV_2D"]) == conv_bytes


@needs_gpu
@pytest.mark.parametrize("timestamps", [True, False], ids=["timestamps", "per-node-waits"])
def test_profile_rows_add_up(tmp_path, monkeypatch, timestamps):
    from gpulite.backends.webgpu import instrument

    if not timestamps:
        monkeypatch.setattr(instrument, "dispatch_times", lambda exe, runs=10: None)
    prof = profile_model(str(_conv_fc_model(tmp_path)), runs=2, batch=3)
    assert ("timestamp queries" in prof["method"]) == timestamps
    assert ("per-node waits" in prof["method"]) != timestamps
    rows = {r["op"]: r for r in prof["rows"]}
    assert rows["CONV_2D"]["mflop"] == pytest.approx(3 * 2 * 10 * 12 * 16 * 3 * 3 * 8 / 1e6)  # batch 3
    assert rows["CONV_2D"]["output"] == [3, 10, 12, 16]
    assert prof["total_ms"] == pytest.approx(sum(r["ms"] for r in prof["rows"]))
    assert all(r["ms"] >= 0 for r in prof["rows"])
    assert prof["gflop"] == pytest.approx(sum(r["mflop"] for r in prof["rows"]) / 1e3)
    assert prof["encode_submit_ms"] > 0 and prof["dispatches_per_invoke"] >= 2


@needs_gpu
def test_profile_command_prints_the_table(tmp_path, capsys):
    out_json = tmp_path / "p.json"
    assert main(["profile", str(_conv_fc_model(tmp_path)), "--runs", "2", "--top", "1", "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"CPU time of one resident invoke\(\) \(encode \+ submit, no wait\): [\d.]+ ms", text)
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| node | op |") and table[-1].startswith("| total |")
    assert len(table) == 3  # header, --top 1 row, total
    assert json.loads(out_json.read_text())["batch"] == 1


def test_profile_rejects_bad_arguments(capsys):
    assert main(["profile", "face_detection_short_range", "--batch", "0"]) == 2
    assert "--batch and --runs must be at least 1" in capsys.readouterr().err
