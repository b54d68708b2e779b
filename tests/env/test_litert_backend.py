"""The ``litert`` backend (gpulite.backends.litert): LiteRT's kernels behind gpulite's Interpreter.

The oracle is plain LiteRT (``ai_edge_litert.interpreter.Interpreter`` on the original file, default
options, as a user's script runs it): on the zoo models the backend must give the same bits. The one
model LiteRT cannot run alone (face_landmark_with_attention, three MediaPipe custom ops) is cut into
partitions and compared with gpulite's cpu backend.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import gpulite
from gpulite import runtime, zoo
from gpulite.backends.litert import partition as pt
from gpulite.environment import env
from gpulite.model.writer import ModelBuilder
from tests.assets import model_path
from tests.compare import assert_same
from tests.models.test_zoo_models import RTOL, random_input
from tests.test_hardening import _custom_op_model

litert = pytest.importorskip("ai_edge_litert.interpreter")

ATTENTION = "face_landmark_with_attention"
MEDIAPIPE_OPS = {"Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"}
LITERT_MODELS = [n for n in zoo.NAMES if n != ATTENTION]


def _run(it, x: np.ndarray) -> list[np.ndarray]:
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _input(path: str, seed: int = 0) -> np.ndarray:
    return random_input(tuple(litert.Interpreter(model_path=path).get_input_details()[0]["shape"]), seed)


@pytest.mark.parametrize("name", LITERT_MODELS)
def test_zoo_model_gives_plain_litert_bits(name: str) -> None:
    path = str(model_path(name))
    x = _input(path)
    it = gpulite.Interpreter(model_path=path, backend="litert", num_threads=2)
    got = _run(it, x)
    want = _run(litert.Interpreter(model_path=path, num_threads=2), x)
    plan = it.get_plan()
    assert [p["backend"] for p in plan["partitions"]] == ["litert"]  # the whole model in LiteRT
    assert plan["arena"] == "litert" and plan["copies_per_invoke"] == 0  # its own buffer is the arena
    for g, w, d in zip(got, want, it.get_output_details(), strict=True):
        assert_same(g, w, rtol=0, what=f"{name} {d['name']}")


def test_tensor_views_are_litert_buffers_when_litert_runs_everything() -> None:
    """LiteRT-style zero-copy I/O: write the input through tensor(), read the output through tensor()."""
    path = str(model_path("hand_recrop"))
    it = gpulite.Interpreter(model_path=path, backend="litert")
    it.allocate_tensors()
    x = _input(path, 2)
    it.tensor(it.get_input_details()[0]["index"])()[...] = x
    it.invoke()
    out = it.tensor(it.get_output_details()[0]["index"])
    want = _run(litert.Interpreter(model_path=path), x)[0]
    assert_same(out().copy(), want, rtol=0)
    assert it.get_plan()["arena_bytes"] < 2 * (x.nbytes + want.nbytes) + 4096
    view = out()
    with pytest.raises(RuntimeError):  # a held view blocks invoke, as in LiteRT
        it.invoke()
    del view


@pytest.mark.parametrize("name", LITERT_MODELS)
def test_writer_round_trip_runs_bit_identically_in_litert(name: str) -> None:
    """Each zoo model written back out whole (the graph gpulite runs) gives LiteRT's bits of the original."""
    path = str(model_path(name))
    graph = gpulite.Interpreter(model_path=path, backend="cpu")._source
    whole = pt.Partition(pt.LITERT, list(graph.nodes), list(graph.inputs), list(graph.outputs))
    model, index = pt.write_partition(graph, whole)
    assert [index[i] for i in graph.outputs] == [d["index"] for d in litert.Interpreter(model_content=model)
                                                  .get_output_details()]
    x = _input(path, 1)
    got = _run(litert.Interpreter(model_content=model), x)
    want = _run(litert.Interpreter(model_path=path), x)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, rtol=0, what=name)


def test_attention_model_runs_in_partitions_like_the_cpu_backend() -> None:
    """The MediaPipe custom ops run on gpulite's cpu kernels in their own partitions; everything else
    in LiteRT. Tensors LiteRT makes are read in place; only what goes from one LiteRT partition to
    another is copied."""
    path = str(model_path(ATTENTION))
    it = gpulite.Interpreter(model_path=path, backend="litert")
    x = _input(path)
    got = _run(it, x)
    plan = it.get_plan()
    parts = plan["partitions"]
    assert [p["backend"] for p in parts] == ["litert", "cpu", "litert", "cpu", "litert"]
    ops = {n.index: str(n.op) for n in it.graph.nodes}
    for p in parts:
        kinds = {ops[i] for i in p["nodes"]}
        assert kinds <= MEDIAPIPE_OPS if p["backend"] == "cpu" else not kinds & MEDIAPIPE_OPS
    assert sum(len(p["nodes"]) for p in parts) == len(it.graph.nodes)
    made_by_litert = {t for p in parts if p["backend"] == "litert" for t in p["outputs"]}
    assert {c["tensor"] for c in plan["copies_between_partitions"]} <= made_by_litert
    assert len(plan["copies_between_partitions"]) == 2
    assert plan["arena"] == "host" and plan["copies_per_invoke"] == 2 + 1 + len(it.get_output_details())
    ref = gpulite.Interpreter(model_path=path, backend="cpu")
    for g, w, d in zip(got, _run(ref, x), it.get_output_details(), strict=True):
        assert_same(g, w, rtol=RTOL, what=d["name"])


def test_attention_model_small_partitions_on_one_thread_custom_ops_in_one_call() -> None:
    """With two threads, the LiteRT partitions of small nodes (the 16x16 crops' subnetworks, the
    reshapes at the end) run on one thread, the backbone on two; each cpu partition of MediaPipe
    ops runs as one compiled call where the compiled loops are available. Outputs as the cpu
    backend's."""
    from gpulite.backends.cpu import jit

    path = str(model_path(ATTENTION))
    it = gpulite.Interpreter(model_path=path, backend="litert", num_threads=2)
    x = _input(path, 3)
    got = _run(it, x)
    parts = it.get_plan()["partitions"]
    assert [p.get("num_threads") for p in parts] == [2, None, 1, None, 1]
    assert [p.get("one_call") for p in parts] == [None, jit.available(), None, jit.available(), None]
    ref = gpulite.Interpreter(model_path=path, backend="cpu")
    for g, w, d in zip(got, _run(ref, x), it.get_output_details(), strict=True):
        assert_same(g, w, rtol=RTOL, what=d["name"])


def test_a_declared_custom_op_runs_on_its_cpu_kernel_between_litert_partitions() -> None:
    name = gpulite.declare_custom_op("LitertTestTwice")

    @gpulite.register_kernel(name, "cpu")
    def twice(node, ctx):
        x, y = ctx.input(0), ctx.output(0)
        return lambda: np.multiply(x, 2.0, out=y)

    try:
        mb = ModelBuilder()
        a = mb.input("a", (2, 3), np.float32)
        b, c, d = (mb.tensor(n, (2, 3), np.float32) for n in "bcd")
        mb.op("ADD", [a, a], [b])
        mb.custom_op("LitertTestTwice", [b], [c])
        mb.op("MUL", [c, b], [d])
        mb.output(d, b)
        it = gpulite.Interpreter(model_content=mb.build(), backend="litert")
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        y, b_out = _run(it, x)
        np.testing.assert_array_equal(y, (4 * x) * (2 * x))
        np.testing.assert_array_equal(b_out, 2 * x)
        parts = it.get_plan()["partitions"]
        assert [p["backend"] for p in parts] == ["litert", "cpu", "litert"]
        assert parts[1]["one_call"] is False  # a Python kernel: called on its own
        assert [parts[0]["num_threads"], parts[2]["num_threads"]] == [1, 1]  # 1 node of 6 flops each
        # the graph input and both outputs are in the host arena, viewed by tensor()
        it.tensor(it.get_input_details()[0]["index"])()[...] = 1.0
        it.invoke()
        np.testing.assert_array_equal(it.tensor(it.get_output_details()[0]["index"])(), np.full((2, 3), 8.0))
    finally:
        gpulite.unregister_kernel(name, "cpu")


def test_resize_threads_profile_and_intermediates() -> None:
    mb = ModelBuilder()
    a = mb.input("a", (1, 4), np.float32, shape_signature=(-1, 4))
    w = mb.const("w", np.arange(12, dtype=np.float32).reshape(3, 4))
    h = mb.tensor("h", (1, 3), np.float32, shape_signature=(-1, 3))
    y = mb.tensor("y", (1, 3), np.float32, shape_signature=(-1, 3))
    mb.op("FULLY_CONNECTED", [a, w, -1], [h])
    mb.op("RELU", [h], [y])
    mb.output(y)
    it = gpulite.Interpreter(model_content=mb.build(), backend="litert", num_threads=2)
    it.resize_tensor_input(it.get_input_details()[0]["index"], [3, 4], strict=True)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (got,) = _run(it, x)
    np.testing.assert_allclose(got, np.maximum(x @ np.arange(12, dtype=np.float32).reshape(3, 4).T, 0), rtol=1e-6)
    assert it.get_input_details()[0]["shape_signature"].tolist() == [-1, 4]
    with pytest.raises(ValueError, match="holds no data"):
        it.get_tensor(h)  # LiteRT keeps its intermediates to itself
    p = gpulite.profile(it.invoke)
    assert [k.name for k in p.kernels] == [f"{n.op}#{n.index}" for n in it.graph.nodes]
    assert {k.backend for k in p.kernels} == {"litert"}


def test_eager_ops_run_on_the_cpu_kernels() -> None:
    assert gpulite.set_backend("litert")
    try:
        y = gpulite.ops.relu(gpulite.ops.sub(gpulite.tensor(np.arange(4, dtype=np.float32)), 1.5))
        assert y.backend == "litert"
        np.testing.assert_array_equal(y.numpy(), np.maximum(np.arange(4) - 1.5, 0).astype(np.float32))
    finally:
        runtime.reset_active()


def test_auto_takes_litert_when_there_is_no_real_gpu() -> None:
    ranks = {b.name: b.rank for b in runtime.describe_backends()}
    if (ranks.get("webgpu") or 0) > ranks["litert"]:
        pytest.skip("a real GPU ranks first here")
    runtime.reset_active()
    assert gpulite.get_backend() == "litert"
    assert gpulite.backend_choice().startswith("auto: 'litert' is the highest-ranked backend")
    env().set("auto_measure", False)  # the ranking (what auto measures: tests/env/test_auto_measure.py)
    assert gpulite.Interpreter(model_path=str(model_path("hand_recrop")), backend="auto").backend == "litert"


BLOCKED = """
import sys
sys.modules["ai_edge_litert"] = None  # as if ai-edge-litert were not installed
import gpulite
from gpulite.errors import BackendError
try:
    gpulite.Interpreter(model_path={path!r}, backend="litert")
except BackendError as e:
    print("ERROR", e)
print("AUTO", gpulite.get_backend())
print("WHY", gpulite.backend_choice())
"""


def test_without_ai_edge_litert_litert_is_a_clear_error_and_auto_falls_back() -> None:
    code = BLOCKED.format(path=str(model_path("hand_recrop")))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "ERROR backend 'litert' needs the ai-edge-litert package" in out
    assert "pip install 'gpulite[litert]'" in out
    assert "AUTO litert" not in out
    assert "ai-edge-litert is not installed" in out or "AUTO webgpu" in out



QUIET = {  # the litert backend; the LiteRT reference of `gpulite bench`
    "backend": """
import gpulite
it = gpulite.Interpreter(model_path={path!r}, backend="litert", num_threads=1)
it.allocate_tensors()
it.invoke()
print("ran")
""",
    "bench": """
from gpulite.commands.common import litert_interpreter
ref, why = litert_interpreter({path!r}, 1)
assert ref is not None, why
print("ran")
"""}


@pytest.mark.parametrize("made_by", sorted(QUIET))
def test_a_litert_interpreter_writes_nothing_to_stderr(made_by: str) -> None:
    """A fresh process: LiteRT's XNNPACK INFO line (once a process, from C++ on fd 2) is kept off stderr."""
    code = QUIET[made_by].format(path=str(model_path("hand_recrop")))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "")


def test_litert_errors_and_warnings_still_reach_the_user(monkeypatch, capfd) -> None:
    from gpulite.backends.litert import quiet

    monkeypatch.setattr(quiet, "_seen", False)
    with quiet.without_xnnpack_info():
        os.write(2, b"WARNING: kept\n" + quiet.XNNPACK_INFO + b"\nERROR: kept too\nno newline")
    assert capfd.readouterr().err == "WARNING: kept\nERROR: kept too\nno newline"
    assert quiet._seen, "after the line, nothing more is captured"
    monkeypatch.setattr(quiet, "_seen", False)
    with pytest.raises(RuntimeError, match="unresolved custom op: NoSuchOp"):  # LiteRT's refusal, as it raises it
        quiet.allocated(litert.Interpreter, model_content=_custom_op_model("NoSuchOp", b""))
    assert "INFO:" not in capfd.readouterr().err


def test_quantization_signatures_and_variables_are_written_faithfully() -> None:
    """A quantized model (per-channel int8 conv, calibration min/max, a dynamic batch, a variable
    tensor) gives plain LiteRT's bits on litert, and its partition says the same as the file."""
    from gpulite.model.reader import load
    from gpulite.model.writer import Quant

    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    x = mb.input("x", (1, 6, 6, 3), np.float32, shape_signature=(-1, 6, 6, 3))
    xq = mb.tensor("xq", (1, 6, 6, 3), np.int8, quant=Quant(0.02, 3, min=[-2.6], max=[2.5]))
    w = mb.const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                 quant=Quant(rng.uniform(0.004, 0.02, 4).astype(np.float32), np.zeros(4, np.int64), axis=0))
    b = mb.const("b", rng.integers(-500, 500, 4).astype(np.int32), quant=Quant(np.full(4, 1e-4, np.float32)))
    yq = mb.tensor("yq", (1, 6, 6, 4), np.int8, quant=(0.05, -2))
    state = mb.const("state", np.full((1, 6, 6, 4), 0.5, np.float32))
    y = mb.tensor("y", (1, 6, 6, 4), np.float32)
    z = mb.tensor("z", (1, 6, 6, 4), np.float32, is_variable=True)
    mb.op("QUANTIZE", [x], [xq])
    mb.op("CONV_2D", [xq, w, b], [yq], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    mb.op("DEQUANTIZE", [yq], [y])
    mb.op("ADD", [y, state], [z])
    mb.output(z)
    model = mb.build()
    data = rng.uniform(-2, 2, (1, 6, 6, 3)).astype(np.float32)
    it = gpulite.Interpreter(model_content=model, backend="litert")
    (got,) = _run(it, data)
    (want,) = _run(litert.Interpreter(model_content=model), data)
    assert_same(got, want, rtol=0)
    graph = it.graph
    (part,) = pt.partition(graph, litert.Interpreter)
    written = load(pt.write_partition(graph, part)[0]).subgraphs[0]
    original = {t.name: t for t in load(model).subgraphs[0].tensors}
    assert sorted(t.name for t in written.tensors) == sorted(original)
    assert any(t.is_variable for t in written.tensors)
    for a in written.tensors:
        o = original[a.name]
        assert (a.name, a.shape, a.shape_signature, a.type_code, a.is_variable) == \
               (o.name, o.shape, o.shape_signature, o.type_code, o.is_variable)
        assert (a.quantization is None) == (o.quantization is None)
        if o.quantization is not None:
            for f in ("scale", "zero_point", "min", "max"):
                np.testing.assert_array_equal(getattr(a.quantization, f), getattr(o.quantization, f))
            assert a.quantization.axis == o.quantization.axis
        if o.data is not None:
            assert a.data.tobytes() == o.data.tobytes()


def test_scalar_and_dynamic_tensors_cross_without_views() -> None:
    """LiteRT has no tensor() view of a 0-d tensor (a scalar comes back) nor of an output it allocates
    in each Invoke (FILL with runtime dims): those are set and read around each Invoke."""
    mb = ModelBuilder()
    d, v = mb.input("d", (2,), np.int64), mb.input("v", (), np.float32)
    y = mb.tensor("y", (3, 2), np.float32)
    mb.op("FILL", [d, v], [y])
    mb.output(y)
    model = mb.build()
    it = gpulite.Interpreter(model_content=model, backend="litert")
    it.allocate_tensors()
    assert it.get_plan()["arena"] == "host"
    for value in (-1.5, 4.0):
        ins = [np.array([3, 2], np.int64), np.array(value, np.float32)]
        for det, x in zip(it.get_input_details(), ins, strict=True):
            it.set_tensor(det["index"], x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), np.full((3, 2), value))
