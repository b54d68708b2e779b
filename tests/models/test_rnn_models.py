"""Converter-written recurrent and control-flow models (tests/data/rnn, made by tools/make_rnn_models.py)
against LiteRT.

Keras 2 LSTMs convert to UNIDIRECTIONAL_SEQUENCE_LSTM nodes whose states are variable
tensors; Keras 3 LSTMs and GRUs to WHILE loops over further subgraphs (writing tensor lists
when they return sequences); ``tf.cond`` to IF; a
``tf.Variable`` updated at each call to CALL_ONCE and resource variables. Each model runs
three invokes on seeded inputs in one interpreter, so the states LiteRT keeps between
invokes (LSTM states, resource variables) must be kept the same way. Float outputs must be within
``1e-4 * max(1, max|ref|)`` of LiteRT's (default options), or, where LiteRT's own XNNPACK
and reference kernels disagree by more than half that, within twice their disagreement
measured in the same run (as tests/models/test_zoo_models.py). On webgpu the sequence LSTMs run
on the GPU (a model of them is one GPU partition) and the control-flow nodes on the cpu fallback,
the rest of each model on the GPU, within 1e-3.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.model.reader import load
from tests.compare import assert_same
from tests.webgpu.support import adapter_problem

DATA = Path(__file__).resolve().parents[1] / "data" / "rnn"
RTOL, GPU_RTOL, INVOKES = 1e-4, 1e-3, 3
NAMES = sorted(p.stem for p in DATA.glob("*.tflite"))


CONTROL_FLOW = {"WHILE", "IF", "CALL_ONCE"}


def _ops(name: str) -> set[str]:
    """Every op of every subgraph of ``tests/data/rnn/<name>.tflite``."""
    return {str(o.op) for sg in load(DATA / f"{name}.tflite").subgraphs for o in sg.operators}


def _inputs(it) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(7)
    return [[rng.uniform(-2, 2, d["shape"]).astype(d["dtype"]) for d in it.get_input_details()]
            for _ in range(INVOKES)]


def _run_all(it, feeds: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    it.allocate_tensors()
    outs = []
    for xs in feeds:
        for d, x in zip(it.get_input_details(), xs, strict=True):
            it.set_tensor(d["index"], x)
        it.invoke()
        outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    return outs


def _litert(path: Path, builtin: bool = False):
    from ai_edge_litert.interpreter import Interpreter as LiteRt
    from ai_edge_litert.interpreter import OpResolverType

    kind = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if builtin else OpResolverType.AUTO
    return LiteRt(model_path=str(path), experimental_op_resolver_type=kind)


def _compare(name: str, backend: str, rtol: float) -> Interpreter:
    path = DATA / f"{name}.tflite"
    ours = Interpreter(model_path=path, backend=backend)
    ref = _litert(path)
    ref.allocate_tensors()
    feeds = _inputs(ref)
    got, want = _run_all(ours, feeds), _run_all(ref, feeds)
    spread = None
    for step, (g_outs, w_outs) in enumerate(zip(got, want, strict=True)):
        for k, (g, w) in enumerate(zip(g_outs, w_outs, strict=True)):
            what = f"{name} output {k} at invoke {step} ({backend})"
            try:
                assert_same(g, w, rtol=rtol, what=what)
            except AssertionError:
                if spread is None:
                    spread = _run_all(_litert(path, builtin=True), feeds)
                own = float(np.abs(spread[step][k] - w).max())
                if 2 * own <= rtol * max(1.0, float(np.abs(w).max())):
                    raise
                assert float(np.abs(g - w).max()) <= 2 * own, f"{what}: beyond twice LiteRT's own spread {own}"
    return ours


@pytest.mark.parametrize("name", NAMES)
def test_rnn_model_matches_litert_on_cpu(name):
    _compare(name, "cpu", RTOL)


@pytest.mark.parametrize("name", NAMES)
def test_rnn_model_matches_litert_on_webgpu(name):
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    ours = _compare(name, "webgpu", GPU_RTOL)
    plan = ours.get_plan()
    cpu_ops = {str(op) for p in plan["partitions"] if p["backend"] != "webgpu" for op in p["ops"]}
    assert any(p["backend"] == "webgpu" for p in plan["partitions"]), "nothing ran on the GPU"
    # The sequence LSTMs (states included) run on the GPU: a model of them is one GPU partition.
    # Control flow (WHILE, IF, CALL_ONCE) runs its subgraphs on the cpu.
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" not in cpu_ops, plan["cpu_fallback"]
    if not _ops(name) & CONTROL_FLOW:
        assert len(plan["partitions"]) == 1 and not plan["crossings"], plan["partitions"]
    else:
        assert cpu_ops & CONTROL_FLOW, plan["partitions"]


def test_models_use_the_ops_they_stand_for():
    """Guards the corpus: a converter that stopped fusing the LSTM (or emitting WHILE / IF)
    would leave these tests passing without testing those kernels."""
    ops = _ops
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops("lstm") and "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops("bilstm")
    assert "WHILE" in ops("gru") and "WHILE" in ops("lstm_while") and "IF" in ops("cond")
    assert {"WHILE", "SLICE"} <= ops("stacked"), "the stacked model's loops should write tensor lists"
    assert {"CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"} <= ops("stateful")
    sg = load(DATA / "lstm_dynamic.tflite").subgraphs[0]
    lstm = next(o for o in sg.operators if str(o.op) == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert sg.tensors[lstm.inputs[2]].dtype == np.int8, "the dynamic-range LSTM should have int8 weights"
    assert lstm.options.asymmetric_quantize_inputs
    assert any(t.is_variable for t in sg.tensors)
    sg = load(DATA / "lstm_f16.tflite").subgraphs[0]
    assert any(str(o.op) == "DEQUANTIZE" and sg.tensors[o.outputs[0]].is_variable for o in sg.operators), \
        "the float16 LSTM should initialise its states with DEQUANTIZE"


def test_lstm_state_carries_over_invokes():
    """The same input twice gives different outputs (the state moved on), as in LiteRT."""
    it = Interpreter(model_path=DATA / "lstm.tflite")
    x = np.random.default_rng(1).uniform(-1, 1, it.get_input_details()[0]["shape"]).astype(np.float32)
    first, second = _run_all(it, [[x], [x]])
    assert np.abs(first[0] - second[0]).max() > 1e-4
