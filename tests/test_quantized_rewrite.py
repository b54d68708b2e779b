"""The graph rewrite behind the WebGPU backend's quantized="float" (``backends/webgpu/quantized.py``):
structure only (no GPU): values are tests/webgpu/test_quantized.py's."""

from __future__ import annotations

import numpy as np

from gpulite.backends.webgpu.quantized import float_graph
from gpulite.graph.ir import Graph
from gpulite.model.opdefs import Op
from gpulite.model.reader import load
from gpulite.testing.tflite_writer import ModelBuilder


def _graph(cast: bool = False) -> Graph:
    mb = ModelBuilder()
    x = mb.input("x", (1, 4), np.int8, quant=(0.1, 3))
    w = mb.const("w", np.arange(8, dtype=np.int8).reshape(2, 4), quant=(0.05, 0))
    h = mb.tensor("h", (1, 2), np.int8, quant=(0.2, -1))
    mb.op("FULLY_CONNECTED", [x, w, -1], [h])
    y = mb.tensor("y", (1, 2), np.int8, quant=(0.2, -1))
    mb.op("RELU", [h], [y])
    outs = [y]
    if cast:
        c = mb.tensor("c", (1, 2), np.float32)
        mb.op("CAST", [h], [c])
        outs.append(c)
    mb.output(*outs)
    return Graph.from_model(load(mb.build()))


def test_edges_and_float_tensors() -> None:
    g = _graph()
    before = [(t.dtype, t.const) for t in g.tensors]
    f = float_graph(g)
    assert [(t.dtype, t.const) for t in g.tensors] == before, "the source graph was edited"
    assert [str(n.op) for n in f.nodes] == ["DEQUANTIZE", "FULLY_CONNECTED", "RELU", "QUANTIZE"]
    t = f.tensors
    assert t[f.inputs[0]].dtype == np.int8 and t[f.outputs[0]].dtype == np.int8  # the I/O keep their codes
    fc = f.nodes[1]
    assert t[fc.inputs[0]].dtype == np.float32 and t[fc.outputs[0]].dtype == np.float32
    np.testing.assert_allclose(t[fc.inputs[1]].const, np.arange(8).reshape(2, 4) * 0.05, rtol=1e-6)
    assert all(t[i].quant is None for n in f.nodes[1:3] for i in (*n.inputs, *n.outputs) if i >= 0)
    assert sorted(n.index for n in f.nodes)[-2:] == [2, 3]  # edge nodes numbered after the model's


def test_raw_and_cpu_nodes_keep_integers() -> None:
    f = float_graph(_graph(cast=True))
    cast = next(n for n in f.nodes if n.op == Op.CAST)
    assert f.tensors[cast.inputs[0]].dtype == np.int8  # CAST reads codes
    on_cpu = float_graph(_graph(), on_cpu=lambda n: n.op == Op.RELU)
    relu = next(n for n in on_cpu.nodes if n.op == Op.RELU)
    assert on_cpu.tensors[relu.inputs[0]].dtype == np.int8  # LiteRT's int8 RELU runs on the CPU
    assert [str(n.op) for n in on_cpu.nodes] == ["DEQUANTIZE", "FULLY_CONNECTED", "QUANTIZE", "RELU"]


def test_float_models_are_returned_as_they_are() -> None:
    mb = ModelBuilder()
    x = mb.input("x", (2,), np.float32)
    y = mb.tensor("y", (2,), np.float32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    g = Graph.from_model(load(mb.build()))
    assert float_graph(g) is g
