"""Fusion on the WebGPU backend: a PReLU fused into its producer (conv, depthwise, add) and a
RELU fused into a concatenation, each checked against LiteRT and for what the plan runs.
(The ops themselves are tested once, for every backend, in tests/ops.)"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import check_gpu, require_adapter

require_adapter()

F32 = np.float32


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _prelu_after(op: str, alpha: np.ndarray, *, extra_reader: bool = False) -> tuple[bytes, list]:
    """x -> op -> PRELU(alpha) -> y (and, with ``extra_reader``, the op's output also a graph output)."""
    rng = _rng(11)
    mb = ModelBuilder()
    shape = (1, 7, 6, 8)
    x = mb.input("x", shape, F32)
    mid = mb.tensor("mid", shape, F32)
    if op == "CONV_2D":
        w = mb.const("w", rng.standard_normal((8, 3, 3, 8)).astype(F32))
        b = mb.const("b", rng.standard_normal(8).astype(F32))
        mb.op(op, [x, w, b], [mid], padding="SAME", stride_h=1, stride_w=1)
    elif op == "DEPTHWISE_CONV_2D":
        w = mb.const("w", rng.standard_normal((1, 3, 3, 8)).astype(F32))
        b = mb.const("b", rng.standard_normal(8).astype(F32))
        mb.op(op, [x, w, b], [mid], padding="SAME", stride_h=1, stride_w=1, depth_multiplier=1)
    else:  # ADD: the residual blocks of the MediaPipe models
        mb.op(op, [x, mb.const("c", rng.standard_normal(8).astype(F32))], [mid])
    y = mb.tensor("y", shape, F32)
    mb.op("PRELU", [mid, mb.const("alpha", alpha)], [y])
    mb.output(y)
    if extra_reader:
        mb.output(mid)
    return mb.build(), [rng.uniform(-4, 4, shape).astype(F32)]


ALPHAS = {"per-channel": np.linspace(-0.5, 1.5, 8, dtype=F32).reshape(1, 1, 8),
          "flat": np.linspace(0.1, 0.8, 8, dtype=F32), "single": np.array([0.25], F32)}


@pytest.mark.parametrize("alpha", ALPHAS.values(), ids=ALPHAS.keys())
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"])
def test_prelu_fused_into_producer(op, alpha):
    from gpulite import Interpreter

    model, feeds = _prelu_after(op, alpha)
    plan = check_gpu(model, feeds)
    assert plan["partitions"][0]["ops"] == {op: 1}, "the PRELU was not fused"
    assert plan["partitions"][0]["dispatches"] == 1
    fused = [n for n in Interpreter(model_content=model, backend="webgpu").graph.nodes if n.prelu_alpha is not None]
    assert [n.op for n in fused] == [op]
    # The CPU backend's prepared graph never has a prelu_alpha (its rules make a PRELU an epilogue step).
    assert not any(n.prelu_alpha is not None for n in Interpreter(model_content=model, backend="cpu").graph.nodes)


@pytest.mark.parametrize("why", ["intermediate-is-output", "spatial-alpha", "producer-forced-to-cpu"])
def test_prelu_not_fused(why):
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter
    from tests.compare import assert_same
    from tests.webgpu.support import run

    alpha = _rng(12).uniform(-1, 1, (7, 6, 8)).astype(F32) if why == "spatial-alpha" else ALPHAS["per-channel"]
    model, feeds = _prelu_after("CONV_2D", alpha, extra_reader=why == "intermediate-is-output")
    if why == "producer-forced-to-cpu":  # the CPU conv knows nothing of a fused PReLU
        it = Interpreter(model_content=model, backend="webgpu", cpu_ops=["CONV_2D"])
        assert [p["ops"] for p in (run(it, feeds) and it.get_plan())["partitions"]] == [{"CONV_2D": 1}, {"PRELU": 1}]
        for a, e in zip(run(it, feeds), run(LiteRT(model_content=model), feeds), strict=True):
            assert_same(a, e, rtol=1e-5)
    else:
        plan = check_gpu(model, feeds)
        assert plan["partitions"][0]["ops"] == {"CONV_2D": 1, "PRELU": 1}


@pytest.mark.parametrize("relu", ["RELU", "RELU6"])
def test_concatenation_then_relu_is_fused(relu):
    # gpulite's fusion pass moves the RELU into the concatenation; LiteRT runs it separately.
    mb = ModelBuilder()
    a, b = mb.input("a", (1, 3, 4), F32), mb.input("b", (1, 3, 2), F32)
    c, y = mb.tensor("c", (1, 3, 6), F32), mb.tensor("y", (1, 3, 6), F32)
    mb.op("CONCATENATION", [a, b], [c], axis=2)
    mb.op(relu, [c], [y])
    mb.output(y)
    rng = _rng(9)
    plan = check_gpu(mb.build(), [rng.uniform(-8, 8, (1, 3, 4)).astype(F32), rng.uniform(-8, 8, (1, 3, 2)).astype(F32)])
    assert plan["partitions"][0]["ops"] == {"CONCATENATION": 1}, "the RELU was not fused"


def _heads(relu: bool = False) -> tuple[bytes, list]:
    """x -> two 1x1 convs -> RESHAPE each to [1, rows, 4] -> CONCATENATION on axis 1 (the
    detectors' heads), optionally followed by a RELU (fused into the concatenation)."""
    rng = _rng(21)
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 8), F32)
    parts = []
    for k, cout in enumerate((8, 4)):
        c = mb.tensor(f"c{k}", (1, 4, 4, cout), F32)
        mb.op("CONV_2D", [x, mb.const(f"w{k}", rng.standard_normal((cout, 1, 1, 8)).astype(F32)),
                          mb.const(f"b{k}", rng.standard_normal(cout).astype(F32))], [c],
              padding="SAME", stride_h=1, stride_w=1)
        r = mb.tensor(f"r{k}", (1, 4 * cout, 4), F32)
        mb.op("RESHAPE", [c, mb.const(f"s{k}", np.array([1, 4 * cout, 4], np.int32))], [r])
        parts.append(r)
    y = mb.tensor("y", (1, 48, 4), F32)
    mb.op("CONCATENATION", parts, [y], axis=1)
    if relu:
        z = mb.tensor("z", (1, 48, 4), F32)
        mb.op("RELU", [y], [z])
        y = z
    mb.output(y)
    return mb.build(), [rng.uniform(-2, 2, (1, 4, 4, 8)).astype(F32)]


@pytest.mark.parametrize("relu", [False, True])
def test_concatenation_inputs_are_written_in_place(relu):
    """The convs write straight into their slices of the concatenation's output (reshapes and
    the concatenation dispatch nothing); not with a fused RELU, which changes the values."""
    from gpulite import Interpreter

    model, feeds = _heads(relu)
    plan = check_gpu(model, feeds)
    assert plan["dispatches_per_invoke"] == (4 if relu else 2)  # two convs (+ two concat copies)
    it = Interpreter(model_content=model, backend="webgpu")
    it.allocate_tensors()
    g, offsets = it.graph, it.memory_plan.offsets
    convs = [n.outputs[0] for n in g.nodes if n.op == "CONV_2D"]
    concat = next(n for n in g.nodes if n.op == "CONCATENATION").outputs[0]
    if relu:
        assert all(off == 0 for _, off in g.views.values())  # only the reshapes are views
    else:  # the first conv's 1x4x4x8 floats, then the second's
        assert g.views == {**{c: (concat, off) for c, off in zip(convs, (0, 512), strict=True)},
                           **{n.outputs[0]: (n.inputs[0], 0) for n in g.nodes if n.op == "RESHAPE"}}
        assert [offsets[c] - offsets[concat] for c in convs] == [0, 512]


@pytest.mark.parametrize(("c", "cout", "stride", "act"), [(16, 8, 1, "RELU6"), (8, 12, 2, "NONE"), (4, 32, 1, "RELU")])
def test_thin_depthwise_and_1x1_run_as_one_kernel(c, cout, stride, act):
    """The delegate's depthwise + 1x1 merge: one dispatch, LiteRT's values, and the profile
    counts both convolutions' FLOPs for the merged node."""
    from gpulite import Interpreter
    from gpulite.graph.cost import flops

    rng = _rng(31)
    mb = ModelBuilder()
    x = mb.input("x", (1, 9, 7, c), F32)
    oh, ow = -(-9 // stride), -(-7 // stride)
    mid, y = mb.tensor("mid", (1, oh, ow, c), F32), mb.tensor("y", (1, oh, ow, cout), F32)
    mb.op("DEPTHWISE_CONV_2D", [x, mb.const("w", rng.standard_normal((1, 3, 3, c)).astype(F32)),
                                mb.const("b", rng.standard_normal(c).astype(F32))], [mid],
          padding="SAME", stride_h=stride, stride_w=stride, depth_multiplier=1, fused_activation_function=act)
    mb.op("CONV_2D", [mid, mb.const("w2", rng.standard_normal((cout, 1, 1, c)).astype(F32)),
                      mb.const("b2", rng.standard_normal(cout).astype(F32))], [y],
          padding="SAME", stride_h=1, stride_w=1, fused_activation_function="RELU")
    mb.output(y)
    model = mb.build()
    plan = check_gpu(model, [rng.uniform(-2, 2, (1, 9, 7, c)).astype(F32)])
    assert plan["dispatches_per_invoke"] == 1 and plan["partitions"][0]["ops"] == {"DEPTHWISE_CONV_2D": 1}
    g = Interpreter(model_content=model, backend="webgpu").graph
    cpu = Interpreter(model_content=model, backend="cpu").graph
    assert g.nodes[0].pointwise is not None
    assert flops(g, g.nodes[0]) == sum(flops(cpu, n) for n in cpu.nodes)
