"""The ``Interpreter`` API against LiteRT's: details dicts, errors, views, resizing, signatures.

The details of every zoo model are compared with ``ai_edge_litert``'s field by field, so a
script written for LiteRT sees the same names, indices, shapes, types and quantization
from gpulite. The smaller API cases use models written with
:class:`gpulite.testing.tflite_writer.ModelBuilder` and, where the behaviour is defined by
LiteRT, run the same model through LiteRT too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter, UnsupportedOpError, zoo
from gpulite.graph.plan import ALIGN, plan_memory, topological_order
from tests.assets import model_path


def litert(**kwargs):
    from ai_edge_litert.interpreter import Interpreter as LiteRtInterpreter

    return LiteRtInterpreter(**kwargs)


# -- field-by-field comparison of details dicts ---------------------------------------------
def _diff(ours, theirs, path: str) -> list[str]:
    """Every difference between two details values, as readable lines (empty when equal)."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{path}: {type(ours).__name__} instead of dict"]
        out = [f"{path}: keys {sorted(ours)} vs LiteRT's {sorted(theirs)}"] if set(ours) != set(theirs) else []
        for k in sorted(set(ours) & set(theirs)):
            out += _diff(ours[k], theirs[k], f"{path}.{k}")
        return out
    if isinstance(theirs, np.ndarray):
        if not isinstance(ours, np.ndarray):
            return [f"{path}: {type(ours).__name__} instead of ndarray"]
        if ours.dtype != theirs.dtype or ours.shape != theirs.shape or not np.array_equal(ours, theirs):
            return [f"{path}: {ours!r} vs LiteRT's {theirs!r}"]
        return []
    if isinstance(theirs, (list, tuple)):
        if type(ours) is not type(theirs) or len(ours) != len(theirs):
            return [f"{path}: {ours!r} vs LiteRT's {theirs!r}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in _diff(a, b, f"{path}[{i}]")]
    # Scalars and dtype classes: same type and value (0.0 vs 0 would change a user's printout).
    if type(ours) is not type(theirs) or ours != theirs:
        return [f"{path}: {ours!r} ({type(ours).__name__}) vs LiteRT's {theirs!r} ({type(theirs).__name__})"]
    return []


def assert_same_details(ours: list[dict], theirs: list[dict], what: str) -> None:
    assert [d["index"] for d in ours] == [d["index"] for d in theirs], f"{what}: different tensor indices"
    problems = [p for a, b in zip(ours, theirs, strict=True) for p in _diff(a, b, f"{what}[{b['index']}]")]
    assert not problems, f"{len(problems)} differences, first ones:\n" + "\n".join(problems[:15])


def test_diff_sees_differences():
    """The comparison itself must fail on the differences that matter."""
    base = {"shape": np.array([1, 2], np.int32), "dtype": np.float32, "quantization": (0.0, 0)}
    assert not _diff(base, dict(base), "t")
    assert _diff({**base, "shape": np.array([1, 2], np.int64)}, base, "t")
    assert _diff({**base, "dtype": np.int8}, base, "t")
    assert _diff({**base, "quantization": (0, 0)}, base, "t")
    assert _diff({k: v for k, v in base.items() if k != "dtype"}, base, "t")


@pytest.mark.parametrize("name", zoo.NAMES)
def test_details_match_litert(name):
    path = str(model_path(name))
    ours, ref = Interpreter(model_path=path), litert(model_path=path)
    assert_same_details(ours.get_input_details(), ref.get_input_details(), "inputs")
    assert_same_details(ours.get_output_details(), ref.get_output_details(), "outputs")
    assert_same_details(ours.get_tensor_details(), ref.get_tensor_details(), "tensors")
    try:
        ref.allocate_tensors()
    except RuntimeError:
        # face_landmark_with_attention: LiteRT has no kernels for MediaPipe's custom ops.
        assert name == "face_landmark_with_attention"
        return
    # LiteRT's list after allocation (delegates applied) is what scripts usually see.
    assert_same_details(ours.get_tensor_details(), ref.get_tensor_details(), "tensors after allocate")


def test_model_path_accepts_a_zoo_name():
    it = Interpreter(model_path="hand_recrop")
    ref = litert(model_path=str(model_path("hand_recrop")))
    assert_same_details(it.get_input_details(), ref.get_input_details(), "inputs")


def test_model_content_is_the_same_model():
    data = model_path("face_detection_short_range").read_bytes()
    a, b = Interpreter(model_content=data), Interpreter(model_path=str(model_path("face_detection_short_range")))
    assert_same_details(a.get_tensor_details(), b.get_tensor_details(), "tensors")
    with pytest.raises(TypeError, match="model_content must be bytes"):
        Interpreter(model_content="face_detection_short_range")
    with pytest.raises(ValueError, match="exactly one"):
        Interpreter()


# -- small models ---------------------------------------------------------------------------
def add_model(signature: bool = False, dynamic: bool = False, shape_signature=None) -> bytes:
    """y = x + [1, 2, 3] with x of shape [1, 3] (shape_signature [-1, 3] when ``dynamic``)."""
    from gpulite.testing.tflite_writer import ModelBuilder

    mb = ModelBuilder()
    sig = (-1, 3) if dynamic else shape_signature
    x = mb.input("x", (1, 3), np.float32, shape_signature=sig)
    c = mb.const("c", np.array([1, 2, 3], np.float32))
    y = mb.tensor("y", (1, 3), np.float32, shape_signature=sig)
    mb.op("ADD", [x, c], [y])
    mb.output(y)
    return mb.build(signature=("serving_default", {"x": x}, {"y": y}) if signature else None)


def test_set_tensor_rejects_wrong_dtype_and_shape():
    it = Interpreter(model_content=add_model())
    it.allocate_tensors()
    with pytest.raises(ValueError, match=r"FLOAT64.*expected type FLOAT32"):
        it.set_tensor(0, np.zeros((1, 3), np.float64))
    with pytest.raises(ValueError, match=r"\[2, 3\].*expected \[1, 3\]"):
        it.set_tensor(0, np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[3\].*expected \[1, 3\]"):
        it.set_tensor(0, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="constant"):
        it.set_tensor(1, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="out of range"):
        it.set_tensor(99, np.zeros((1, 3), np.float32))
    # LiteRT rejects the same values with ValueError too: scripts catching it keep working.
    ref = litert(model_content=add_model())
    ref.allocate_tensors()
    for bad in (np.zeros((1, 3), np.float64), np.zeros((2, 3), np.float32)):
        with pytest.raises(ValueError):
            ref.set_tensor(0, bad)


def test_invoke_adds():
    it = Interpreter(model_content=add_model())
    it.allocate_tensors()
    it.set_tensor(0, np.array([[1, 1, 1]], np.float32))
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(2), [[2, 3, 4]])
    np.testing.assert_array_equal(it.get_tensor(1), [1, 2, 3])  # constants are readable


def test_tensor_view_blocks_invoke_and_allocate_while_alive():
    it = Interpreter(model_content=add_model())
    it.allocate_tensors()
    get_x = it.tensor(0)
    view = get_x()
    view[...] = 5  # the documented raw-access pattern writes the input in place
    with pytest.raises(RuntimeError, match="reference to internal data"):
        it.invoke()
    with pytest.raises(RuntimeError, match="reference to internal data"):
        it.allocate_tensors()
    del view
    it.invoke()  # holding the function (not the array) is allowed
    np.testing.assert_array_equal(it.get_tensor(2), [[6, 7, 8]])
    out = it.tensor(2)()
    np.testing.assert_array_equal(out, [[6, 7, 8]])
    del out
    it.allocate_tensors()


def test_resize_strict_allows_only_dynamic_dims():
    it = Interpreter(model_content=add_model(dynamic=True))
    it.resize_tensor_input(0, [4, 3], strict=True)
    with pytest.raises(ValueError, match="-1"):
        it.resize_tensor_input(0, [4, 5], strict=True)
    with pytest.raises(ValueError, match="-1"):
        it.resize_tensor_input(0, [4, 3, 1], strict=True)
    static = Interpreter(model_content=add_model(dynamic=False))
    with pytest.raises(ValueError, match="-1"):
        static.resize_tensor_input(0, [2, 3], strict=True)
    with pytest.raises(ValueError, match="not an input"):
        static.resize_tensor_input(2, [2, 3])
    with pytest.raises(ValueError, match="non-negative"):
        static.resize_tensor_input(0, [-2, 3])


# LiteRT keeps a shape_signature stored in the file, and reports the current shape as the
# signature of a tensor whose file stores none.
@pytest.mark.parametrize(("stored", "signature_after"), [(None, [4, 3]), ((1, 3), [1, 3]), ((-1, 3), [-1, 3])])
def test_resize_non_strict_then_run_matches_litert(stored, signature_after):
    data = add_model(shape_signature=stored)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    results = []
    for it in (Interpreter(model_content=data), litert(model_content=data)):
        it.resize_tensor_input(0, [4, 3])  # non-strict: a static dimension may change too
        it.allocate_tensors()
        it.set_tensor(0, x)
        it.invoke()
        results.append((it.get_input_details(), it.get_output_details(), it.get_tensor(2)))
    (gi, go, gy), (ri, ro, ry) = results
    assert_same_details(gi, ri, "inputs after resize")
    assert_same_details(go, ro, "outputs after resize")
    np.testing.assert_array_equal(gy, ry)
    assert gi[0]["shape_signature"].tolist() == go[0]["shape_signature"].tolist() == signature_after


def test_signature_list_and_runner_match_litert():
    data = add_model(signature=True, dynamic=True)
    ours, ref = Interpreter(model_content=data), litert(model_content=data)
    assert ours.get_signature_list() == ref.get_signature_list() == {
        "serving_default": {"inputs": ["x"], "outputs": ["y"]}}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = ours.get_signature_runner()(x=x)
    want = ref.get_signature_runner("serving_default")(x=x)
    assert set(got) == set(want) == {"y"}
    np.testing.assert_array_equal(got["y"], want["y"])
    runner, ref_runner = ours.get_signature_runner("serving_default"), ref.get_signature_runner("serving_default")
    for ours_d, ref_d in ((runner.get_input_details(), ref_runner.get_input_details()),
                          (runner.get_output_details(), ref_runner.get_output_details())):
        assert set(ours_d) == set(ref_d)
        for k in ref_d:
            assert not _diff(ours_d[k], ref_d[k], k), _diff(ours_d[k], ref_d[k], k)
    with pytest.raises(ValueError, match="Invalid Input name"):
        runner(z=x)
    with pytest.raises(ValueError, match="number of inputs"):
        runner()
    with pytest.raises(ValueError, match="Invalid signature_key"):
        ours.get_signature_runner("nope")


def test_signature_runner_needs_a_key_without_exactly_one_signature():
    it = Interpreter(model_content=add_model(signature=False))
    assert it.get_signature_list() == {}
    with pytest.raises(ValueError, match="None is only allowed"):
        it.get_signature_runner()


def test_unsupported_op_is_reported_at_allocate_with_op_node_and_backend():
    from gpulite.testing.tflite_writer import ModelBuilder

    mb = ModelBuilder()
    x = mb.input("x", (1, 3), np.float32)
    c = mb.const("c", np.ones(3, np.float32))
    h = mb.tensor("h", (1, 3), np.float32)
    y = mb.tensor("y", (1, 3), np.float32)
    mb.op("ADD", [x, c], [h])
    mb.custom_op("NoSuchOp", [h], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build())  # construction reads it fine
    with pytest.raises(UnsupportedOpError) as err:
        it.allocate_tensors()
    e = err.value
    assert (e.op, e.node_index, e.backend) == ("NoSuchOp", 1, "cpu")
    assert "NoSuchOp" in str(e) and "node 1" in str(e) and "'cpu'" in str(e)
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        it.invoke()


# -- the arena plan ---------------------------------------------------------------------------
def _lifetimes(graph, order) -> dict[int, tuple[int, int]]:
    """Written out again here, independent of plan.py, so a wrong planner cannot agree with itself."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for step, node in enumerate(order):
        for t in node.outputs:
            if not graph.tensors[t].is_const:
                first.setdefault(t, step)
                last[t] = max(last.get(t, step), step)
        for t in node.inputs:
            if t >= 0 and not graph.tensors[t].is_const:
                last[t] = step
    life = {t: (first[t], last[t]) for t in first}
    for t in (*graph.inputs, *graph.outputs):
        if not graph.tensors[t].is_const:
            life[t] = (0, len(order))
    return life


@pytest.mark.parametrize("name", zoo.NAMES)
def test_arena_plan_shares_memory_without_overlaps(name):
    it = Interpreter(model_path=str(model_path(name)))
    graph = it.graph
    order = topological_order(graph)
    plan = plan_memory(graph, order)
    life = _lifetimes(graph, order)
    # Every tensor a node touches at run time has a place, and nothing else does.
    assert set(plan.offsets) == set(life)
    sizes = {t: graph.tensors[t].nbytes for t in life}
    total = sum(sizes.values())
    assert plan.arena_bytes < total, f"arena {plan.arena_bytes} B does not beat no sharing ({total} B)"
    # No plan can be smaller than the bytes alive at the busiest step.
    peak = max(sum(sizes[t] for t, (a, b) in life.items() if a <= s <= b) for s in range(len(order) + 1))
    assert plan.arena_bytes >= peak
    idx = np.array(sorted(life))
    off = np.array([plan.offsets[t] for t in idx], np.int64)
    end = off + np.array([sizes[t] for t in idx], np.int64)
    lo = np.array([life[t][0] for t in idx])
    hi = np.array([life[t][1] for t in idx])
    assert (off % ALIGN == 0).all() and (off >= 0).all() and (end <= plan.arena_bytes).all()
    live_together = (lo[:, None] <= hi[None, :]) & (lo[None, :] <= hi[:, None])
    share_bytes = (off[:, None] < end[None, :]) & (off[None, :] < end[:, None])
    clash = live_together & share_bytes
    np.fill_diagonal(clash, False)
    a, b = np.nonzero(clash)
    assert a.size == 0, (
        f"tensors {idx[a[0]]} and {idx[b[0]]} are alive together (steps {life[idx[a[0]]]} and "
        f"{life[idx[b[0]]]}) but share arena bytes [{off[a[0]]}, {end[a[0]]}) / [{off[b[0]]}, {end[b[0]]})"
    )


@pytest.mark.parametrize("backend", ["cpu", "litert", "webgpu"])
def test_allocate_again_keeps_inputs_and_state_as_litert(backend):
    """A second ``allocate_tensors`` with no resize between changes nothing in LiteRT: the input
    set before it and an LSTM's state after an invoke stay; the same invoke sequence gives LiteRT's
    outputs."""
    from tests.webgpu.support import usable_backend

    backend = usable_backend(backend)
    path = str(Path(__file__).parent / "data" / "rnn" / "lstm.tflite")
    ref, it = litert(model_path=path), Interpreter(model_path=path, backend=backend)
    x = np.random.default_rng(3).standard_normal(it.get_input_details()[0]["shape"]).astype(np.float32)
    outs = {}
    for name, interp in (("litert", ref), ("gpulite", it)):
        interp.allocate_tensors()
        i, o = interp.get_input_details()[0]["index"], interp.get_output_details()[0]["index"]
        interp.set_tensor(i, x)
        interp.allocate_tensors()  # the input stays
        interp.invoke()
        first = interp.get_tensor(o)
        interp.allocate_tensors()  # the state stays: the next output differs from the first
        interp.invoke()
        outs[name] = (first, interp.get_tensor(o))
    assert np.abs(outs["litert"][1] - outs["litert"][0]).max() > 1e-3
    for k in range(2):
        np.testing.assert_allclose(outs["gpulite"][k], outs["litert"][k], rtol=1e-5, atol=1e-6)
