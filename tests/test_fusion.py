"""The fusion pass (gpulite/graph/fusion.py) as a graph rewrite: it never modifies its input,
makes each kind of rewrite only where the backend's rules allow it, and the CPU backend's
``prepare`` is that pass with its rules.

The numbers of fused graphs are checked against LiteRT in tests/ops/test_cpu_fusion.py
(CPU) and tests/webgpu/test_fusion.py (PReLU on WebGPU).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends.cpu.fusion_rules import CPU_RULES
from gpulite.backends.webgpu.fusion_rules import WebGpuFusionRules
from gpulite.graph import passes
from gpulite.graph.fusion import FusionRules, fuse
from gpulite.graph.ir import Activation, Graph, Pointwise, PRelu, ResidualAdd
from gpulite.graph.plan import topological_order
from gpulite.model.opdefs import FusedActivation, Op
from gpulite.model.reader import load
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.test_cpu_fusion import CASES, shared_dw_output

KINDS = ("activation", "prelu", "pad", "depthwise_bias", "pointwise", "epilogue", "view")
F32 = np.float32
RNG = np.random.default_rng(3)


def _graph(model: bytes) -> Graph:
    g = Graph.from_model(load(model), 0)
    passes.fold_constants(g)
    return g


def every_kind() -> bytes:
    """x -> PAD(H, W) -> DW 3x3 VALID -> 1x1 CONV -> RELU -> 1x1 CONV -> PRELU -> 1x1 CONV -> ADD x
    -> RESHAPE: one chance for each kind of rewrite."""
    mb = ModelBuilder()
    shape = (1, 8, 8, 8)
    x = mb.input("x", shape, F32)
    p = mb.tensor("p", (1, 10, 10, 8), F32)
    mb.op("PAD", [x, mb.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [p])
    t = mb.tensor("d", shape, F32)
    mb.op("DEPTHWISE_CONV_2D", [p, mb.const("dw_w", RNG.standard_normal((1, 3, 3, 8)).astype(F32)),
                                mb.const("dw_b", RNG.standard_normal(8).astype(F32))], [t],
          padding="VALID", stride_w=1, stride_h=1, depth_multiplier=1)
    for k, after in enumerate(("RELU", "PRELU", "ADD")):
        c = mb.tensor(f"c{k}", shape, F32)
        mb.op("CONV_2D", [t, mb.const(f"w{k}", RNG.standard_normal((8, 1, 1, 8)).astype(F32)),
                          mb.const(f"b{k}", RNG.standard_normal(8).astype(F32))], [c],
              padding="SAME", stride_w=1, stride_h=1)
        t = mb.tensor(f"y{k}", shape, F32)
        if after == "RELU":
            mb.op("RELU", [c], [t])
        elif after == "PRELU":
            mb.op("PRELU", [c, mb.const("alpha", np.linspace(-1, 1, 8, dtype=F32).reshape(1, 1, 8))], [t])
        else:
            mb.op("ADD", [c, x], [t])
    r = mb.tensor("r", (1, 64, 8), F32)
    mb.op("RESHAPE", [t, mb.const("shape", np.array([1, 64, 8], np.int32))], [r])
    mb.output(r)
    return mb.build()


class Allow(FusionRules):
    """Rules allowing the given kinds everywhere the pass finds them valid."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = set(kinds)

    def activation(self, g, producer, act):
        return "activation" in self.kinds

    def prelu(self, g, producer, prelu):
        return "prelu" in self.kinds

    def pad(self, g, pad, conv):
        return "pad" in self.kinds

    def depthwise_bias(self, g, dw, conv):
        return "depthwise_bias" in self.kinds

    def pointwise(self, g, dw, conv):
        return "pointwise" in self.kinds

    def epilogue(self, g, producer, node):
        return "epilogue" in self.kinds

    def view(self, g, node):
        return "view" in self.kinds


def made(before: Graph, after: Graph) -> set[str]:
    """The kinds of rewrite that turned ``before`` into ``after``."""
    kinds = set()
    activation = {n.index: n.activation for n in before.nodes}
    for n in after.nodes:
        if n.activation != activation[n.index]:
            kinds.add("activation")
        if n.prelu_alpha is not None:
            kinds.add("prelu")
        if n.pads is not None:
            kinds.add("pad")
        if n.epilogue:
            kinds.add("epilogue")
        if n.pointwise is not None:
            kinds.add("pointwise")
            conv = next(c for c in before.nodes if c.inputs[1:2] == (n.inputs[n.pointwise.weights],))
            if n.pointwise.activation != conv.activation:  # a RELU fused into the merged 1x1
                kinds.add("activation")
    if after.views:
        kinds.add("view")
    if len(after.tensors) > len(before.tensors):  # the folded bias is a new constant
        kinds.add("depthwise_bias")
    return kinds


def summary(g: Graph) -> tuple:
    nodes = [(n.index, n.op, n.inputs, n.outputs, n.activation, n.pads, n.prelu_alpha, n.epilogue, n.pointwise)
             for n in g.nodes]
    return nodes, len(g.tensors), g.inputs, g.outputs, g.views


def all_graphs() -> list[tuple[str, bytes]]:
    cases = [(name, fn()[0]) for name, fn in CASES.items()]
    cases += [(f"shared_dw_output_{k}", model) for k, (model, _) in enumerate(shared_dw_output())]
    return [*cases, ("every_kind", every_kind())]


GRAPHS = all_graphs()
RULES = {"nothing": FusionRules(), "everything": Allow(*KINDS), "cpu": CPU_RULES,
         "webgpu": WebGpuFusionRules(), "webgpu_cpu_ops": WebGpuFusionRules([Op.CONV_2D])}


@pytest.mark.parametrize("rules", RULES.values(), ids=RULES.keys())
@pytest.mark.parametrize("model", [m for _, m in GRAPHS], ids=[n for n, _ in GRAPHS])
def test_input_graph_is_never_modified(model, rules):
    g = _graph(model)
    nodes, tensors = list(g.nodes), list(g.tensors)
    before = pickle.dumps(g)  # every field, constants and options included
    out = fuse(g, rules)
    assert pickle.dumps(g) == before
    assert g.nodes == nodes and all(a is b for a, b in zip(g.nodes, nodes, strict=True))
    assert all(a is b for a, b in zip(g.tensors, tensors, strict=True)) and len(g.tensors) == len(tensors)
    assert not {id(n) for n in out.nodes} & {id(n) for n in g.nodes}, "the result shares nodes with the input"
    assert out.tensors is not g.tensors


@pytest.mark.parametrize("model", [m for _, m in GRAPHS], ids=[n for n, _ in GRAPHS])
def test_rules_that_allow_nothing_change_nothing(model):
    g = _graph(model)
    assert summary(fuse(g, FusionRules())) == summary(g)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_only_where_the_rules_allow_it(kind):
    g = _graph(every_kind())
    assert made(g, fuse(g, Allow(kind))) == {kind}
    assert made(g, fuse(g, Allow(*(k for k in KINDS if k != kind)))) == set(KINDS) - {kind}


def test_every_kind_on_one_graph():
    g = _graph(every_kind())
    out = fuse(g, Allow(*KINDS))
    assert made(g, out) == set(KINDS)
    assert [n.op for n in out.nodes] == ["DEPTHWISE_CONV_2D", "CONV_2D", "CONV_2D", "RESHAPE"]
    dw, prelu_conv, add_conv, reshape = out.nodes
    assert dw.pads == (1, 1, 1, 1) and dw.inputs[2] == -1  # the bias moved into the 1x1 convs
    # the first 1x1 (with the RELU fused) merged into the depthwise, its weights and bias appended
    assert dw.pointwise == Pointwise(3, 4, FusedActivation.RELU) and len(dw.inputs) == 5
    assert dw.outputs == prelu_conv.inputs[:1] and prelu_conv.prelu_alpha is not None
    assert add_conv.epilogue == (ResidualAdd(slot=3, channels=8),) and add_conv.inputs[3] == g.inputs[0]
    assert reshape.inputs[0] == add_conv.outputs[0] and reshape.outputs == g.outputs
    assert out.views == {g.outputs[0]: (add_conv.outputs[0], 0)}


def test_cpu_rules():
    """PRELU after a conv: an epilogue step on the CPU, ``prelu_alpha`` on WebGPU (not where
    the conv is forced onto the CPU); WebGPU merges the depthwise with the 1x1 after it and
    makes the RESHAPE a view, the CPU neither."""
    g = _graph(every_kind())
    cpu = fuse(g, CPU_RULES)
    assert made(g, cpu) == {"activation", "pad", "depthwise_bias", "epilogue"}
    assert [type(s) for n in cpu.nodes for s in n.epilogue] == [PRelu, ResidualAdd]
    webgpu = fuse(g, WebGpuFusionRules())  # the RELU went into the 1x1 merged into the depthwise
    assert made(g, webgpu) == {"activation", "prelu", "pad", "pointwise", "epilogue", "view"}
    assert webgpu.nodes[0].pointwise.activation == FusedActivation.RELU
    assert made(g, fuse(g, WebGpuFusionRules([Op.CONV_2D]))) == {"activation", "pad", "view"}


def test_add_activation_becomes_an_epilogue_step():
    g = _graph(CASES["mobilenet_block"]()[0])
    steps = [s for n in fuse(g, CPU_RULES).nodes for s in n.epilogue]
    assert steps[:2] == [ResidualAdd(slot=3, channels=16), Activation(FusedActivation.RELU)]


@pytest.mark.parametrize("model", [m for _, m in GRAPHS], ids=[n for n, _ in GRAPHS])
def test_cpu_prepare_is_the_pass_with_the_cpu_rules(model, monkeypatch):
    """The graph a CPU Interpreter runs is the model's graph fused once with CPU_RULES, and
    GPULITE_CPU_FUSE=0 leaves it unfused."""
    g = _graph(model)
    g.nodes = topological_order(g)
    assert summary(Interpreter(model_content=model, backend="cpu").graph) == summary(fuse(g, CPU_RULES))
    monkeypatch.setenv("GPULITE_CPU_FUSE", "0")
    assert summary(Interpreter(model_content=model, backend="cpu").graph) == summary(g)


def test_malformed_shapes_are_left_for_the_kernels():
    """Scalar outputs where a conv's should be NHWC (a corrupted file): nothing fused there,
    and no crash; the kernels reject such a node at allocate_tensors. (The final RESHAPE,
    well formed, still becomes a view.)"""
    g = _graph(every_kind())
    for n in g.nodes:
        if n.op in (Op.DEPTHWISE_CONV_2D, Op.CONV_2D):
            g.tensors[n.outputs[0]].shape = ()
    assert made(g, fuse(g, Allow(*KINDS))) <= {"activation", "prelu", "pad", "view"}


def test_result_is_in_execution_order():
    """Nodes listed out of order in the model come back in an order that runs."""
    g = _graph(every_kind())
    g.nodes.reverse()
    out = fuse(g, Allow(*KINDS))
    seen = set(g.inputs) | {t.index for t in out.tensors if t.is_const}
    for n in out.nodes:
        assert all(i < 0 or i in seen for i in n.inputs), (n.op, n.inputs)
        seen.update(n.outputs)
