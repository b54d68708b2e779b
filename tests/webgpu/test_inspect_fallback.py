"""``gpulite inspect MODEL --backend webgpu`` names each node on the CPU fallback and why."""

from __future__ import annotations

import numpy as np

from gpulite.commands.inspect import inspect_model
from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import require_adapter

require_adapter()


def test_inspect_names_fallback_nodes_and_reasons(tmp_path) -> None:
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), np.float32)
    y = mb.tensor("y", (2, 3), np.float32)
    mb.op("ADD", [x, x], [y])  # node 0: on the GPU
    n = mb.input("n", (2, 3), np.int64)
    c = mb.tensor("c", (2, 3), np.int64)
    mb.op("CUMSUM", [n, mb.const("axis", np.array(1, np.int32))], [c])  # node 1: declined (int64)
    s = mb.input("s", (2,), np.int32)
    r = mb.tensor("r", (2,), np.int32)
    mb.op("BROADCAST_ARGS", [s, mb.const("t", np.array([1, 1], np.int32))], [r])  # node 2: no webgpu kernel
    mb.output(y, c, r)
    path = tmp_path / "mixed.tflite"
    path.write_bytes(mb.build())
    lines: list[str] = []
    inspect_model(str(path), backend="webgpu", out=lines.append)
    text = "\n".join(lines)
    assert "cpu fallback  2 node(s) run on the CPU backend:" in text, text
    rows = {ln.split()[1]: ln for ln in lines if ln.startswith("  node ")}
    assert set(rows) == {"1", "2"}, text
    assert "CUMSUM" in rows["1"] and "int64" in rows["1"] and "float32/int32" in rows["1"]
    assert "BROADCAST_ARGS" in rows["2"] and "no webgpu kernel" in rows["2"]


def test_inspect_says_when_nothing_falls_back(tmp_path) -> None:
    mb = ModelBuilder()
    x = mb.input("x", (4,), np.float32)
    y = mb.tensor("y", (4,), np.bool_)
    mb.op("LESS", [x, mb.const("z", np.zeros(4, np.float32))], [y])
    mb.output(y)
    path = tmp_path / "less.tflite"
    path.write_bytes(mb.build())
    lines: list[str] = []
    inspect_model(str(path), backend="webgpu", out=lines.append)
    assert lines[-1] == "cpu fallback  0 node(s) run on the CPU backend", lines[-3:]
