"""Models with a dynamic batch (shape_signature -1) against LiteRT at batch 1, 2 and 5.

``allocate_tensors`` resolves every shape from the inputs' current shapes and folds the
converter's run-time shape chains (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE, FILL, ...) to
constants, so on webgpu a float model runs in one GPU partition with no crossing. WHERE's
output shape comes from the data at each invoke (the cpu kernel sets it). The files under
``tests/data/dynamic/`` were written by TensorFlow's converter (``tools/make_dynamic_models.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRT

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.compare import assert_same
from tests.ops.conftest import _webgpu_unavailable
from tests.webgpu.support import gpu_only

DATA = Path(__file__).parent / "data" / "dynamic"
F32 = np.float32
BATCHES = (1, 2, 5)


@pytest.fixture(params=["cpu", "webgpu"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "webgpu":
        why = _webgpu_unavailable()
        if why is not None:
            pytest.skip(why)
    return request.param


def chain_model() -> bytes:
    """x [-1, 4, 3] -> RESHAPE(x, PACK(SHAPE(x)[0], 12)) + FILL(that shape, 0.5) -> [-1, 12].

    The stored shapes of the open dimensions are 1, or (for the reshape) wrong in both, as the
    converter leaves them."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 3), F32, shape_signature=(-1, 4, 3))
    shape = mb.tensor("shape", (3,), np.int32)
    mb.op("SHAPE", [x], [shape], out_type="INT32")
    batch = mb.tensor("batch", (), np.int32)
    one = mb.const("one", np.array([1], np.int32))
    mb.op("STRIDED_SLICE", [shape, mb.const("zero", np.array([0], np.int32)), one, one], [batch],
          shrink_axis_mask=1)
    target = mb.tensor("target", (2,), np.int32)
    mb.op("PACK", [batch, mb.const("twelve", np.array(12, np.int32))], [target], values_count=2, axis=0)
    flat = mb.tensor("flat", (1, 1), F32, shape_signature=(-1, -1))
    mb.op("RESHAPE", [x, target], [flat])
    half = mb.tensor("half", (1, 12), F32, shape_signature=(-1, 12))
    mb.op("FILL", [target, mb.const("value", np.array(0.5, F32))], [half])
    y = mb.tensor("y", (1, 12), F32, shape_signature=(-1, 12))
    mb.op("ADD", [flat, half], [y])
    mb.output(y)
    return mb.build()


def gather_concat_cast_model() -> bytes:
    """x [-1, 6]: RESHAPE to CONCATENATION(GATHER(SHAPE(x), [0]), [2, 3]) plus a BROADCAST_TO of that
    shape, and RESHAPE to CAST(CAST(SHAPE(x), float) * [2, 0.5], int32) = [2b, 3]."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 6), F32, shape_signature=(-1, 6))
    shape, batch, dims = mb.tensor("shape", (2,), np.int32), mb.tensor("batch", (1,), np.int32), \
        mb.tensor("dims", (3,), np.int32)
    mb.op("SHAPE", [x], [shape], out_type="INT32")
    mb.op("GATHER", [shape, mb.const("first", np.array([0], np.int32))], [batch], axis=0)
    mb.op("CONCATENATION", [batch, mb.const("rest", np.array([2, 3], np.int32))], [dims], axis=0)
    rows, ramp, y = (mb.tensor(n, (1, 2, 3), F32, shape_signature=(-1, 2, 3)) for n in ("rows", "ramp", "y"))
    mb.op("RESHAPE", [x, dims], [rows])
    mb.op("BROADCAST_TO", [mb.const("steps", np.array([0.0, 1.0, 2.0], F32)), dims], [ramp], op_version=2)
    mb.op("ADD", [rows, ramp], [y])
    fshape, scaled, pairs = mb.tensor("fshape", (2,), F32), mb.tensor("scaled", (2,), F32), \
        mb.tensor("pairs", (2,), np.int32)
    mb.op("CAST", [shape], [fshape])
    mb.op("MUL", [fshape, mb.const("scale", np.array([2.0, 0.5], F32))], [scaled])
    mb.op("CAST", [scaled], [pairs])
    z = mb.tensor("z", (2, 3), F32, shape_signature=(-1, 3))
    mb.op("RESHAPE", [x, pairs], [z])
    mb.output(y)
    mb.output(z)
    return mb.build()


def _load(name: str) -> bytes:
    return (DATA / f"{name}.tflite").read_bytes()


def _run(it, batch: int, seed: int, *, strict: bool = True) -> list[np.ndarray]:
    d = it.get_input_details()[0]
    shape = [batch, *(6 if s == -1 else s for s in d["shape_signature"][1:])]  # other open dims: 6
    it.resize_tensor_input(d["index"], shape, strict=strict)
    it.allocate_tensors()
    x = np.random.default_rng(seed).standard_normal(shape).astype(F32)
    it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(o["index"]) for o in it.get_output_details()]


def _compare(model: bytes, backend: str, *, gpu_only_plan: bool) -> Interpreter:
    ref, it = LiteRT(model_content=model), Interpreter(model_content=model, backend=backend)
    rtol = 1e-3 if backend == "webgpu" else 1e-5
    for batch in BATCHES:
        want, got = _run(ref, batch, batch), _run(it, batch, batch)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, rtol=rtol, what=f"batch {batch} output {k}")
        for mine, theirs in zip(it.get_output_details(), ref.get_output_details(), strict=True):
            assert list(mine["shape"]) == list(theirs["shape"])
            assert list(mine["shape_signature"]) == list(theirs["shape_signature"])
        nodes = it.graph.nodes
        assert not {n.op for n in nodes} & {"SHAPE", "RANK"}, "a SHAPE was not folded"
        if gpu_only_plan:  # float models: every integer (shape) computation was folded
            assert {it.graph.tensors[o].dtype for n in nodes for o in n.outputs} == {np.dtype(F32)}
            if backend == "webgpu":
                gpu_only(it.get_plan())
    return it


@pytest.mark.parametrize("name", ["dense_dynamic", "conv_dynamic", "slicing_dynamic"])
def test_converter_models_match_litert_at_every_batch(name: str, backend: str) -> None:
    _compare(_load(name), backend, gpu_only_plan=True)


@pytest.mark.parametrize("make", [chain_model, gather_concat_cast_model], ids=["pack", "gather-concat-cast"])
def test_built_shape_chains_match_litert_at_every_batch(make, backend: str) -> None:
    _compare(make(), backend, gpu_only_plan=True)


def test_where_model_matches_litert_and_runs_where_on_the_cpu(backend: str) -> None:
    it = _compare(_load("where_dynamic"), backend, gpu_only_plan=False)
    if backend == "webgpu":
        where = [p for p in it.get_plan()["partitions"] if "WHERE" in p["ops"]]
        assert [p["backend"] for p in where] == ["cpu"]


def test_details_report_current_shape_and_signature_as_litert() -> None:
    model = _load("conv_dynamic")
    ref, it = LiteRT(model_content=model), Interpreter(model_content=model)
    for interp in (ref, it):
        interp.resize_tensor_input(0, [3, 12, 12, 3], strict=True)
        interp.allocate_tensors()
    # gpulite knows every shape at allocate; LiteRT sizes the tensors after a run-time shape at invoke.
    assert list(it.get_output_details()[0]["shape"]) == [3, 5]
    for interp in (ref, it):
        interp.invoke()
    for mine, theirs in zip(it.get_tensor_details(), ref.get_tensor_details(), strict=True):
        assert mine["name"] == theirs["name"]
        assert list(mine["shape_signature"]) == list(theirs["shape_signature"]), mine["name"]
    # (LiteRT leaves the intermediates its XNNPACK delegate runs at their stored shapes.)
    for get in ("get_input_details", "get_output_details"):
        for mine, theirs in zip(getattr(it, get)(), getattr(ref, get)(), strict=True):
            assert list(mine["shape"]) == list(theirs["shape"]), mine["name"]
    assert list(it.get_input_details()[0]["shape"]) == [3, 12, 12, 3]
    assert list(it.get_input_details()[0]["shape_signature"]) == [-1, 12, 12, 3]


def test_strict_resize_changes_only_open_dimensions() -> None:
    it = Interpreter(model_content=_load("conv_dynamic"))
    with pytest.raises(ValueError, match="only dimensions that are -1"):
        it.resize_tensor_input(0, [2, 13, 12, 3], strict=True)
    it.resize_tensor_input(0, [2, 12, 12, 3], strict=True)
    it.allocate_tensors()
    assert list(it.get_output_details()[0]["shape"]) == [2, 5]


def test_where_outputs_follow_the_data_at_each_invoke() -> None:
    """WHERE's rows, and what the tail after it (GATHER_ND, SUB, SHAPE, STRIDED_SLICE) makes of them."""
    it = Interpreter(model_content=_load("where_dynamic"))
    run = it.get_signature_runner()
    for x, count in ((np.ones((3, 6), F32), 18), (-np.ones((3, 6), F32), 0), (np.eye(3, 6, dtype=F32), 3)):
        out = run(x=x)
        want = np.argwhere(x > 0.25)
        np.testing.assert_array_equal(out["positions"], want)
        assert out["positions"].dtype == np.int64
        np.testing.assert_array_equal(out["picked"], x[x > 0.25] - 0.25)
        assert out["count"] == count
        shapes = {d["index"]: tuple(d["shape"]) for d in it.get_output_details()}
        for name, i in it._model.signatures[0].outputs.items():
            assert shapes[i] == out[name].shape, name
    positions = it._model.signatures[0].outputs["positions"]
    np.testing.assert_array_equal(it.tensor(positions)(), np.argwhere(np.eye(3, 6) > 0.25))


def _where_then(mb: ModelBuilder, add) -> bytes:
    x = mb.input("x", (4, 3), F32)
    cond, idx = mb.tensor("cond", (4, 3), np.bool_), mb.tensor("idx", (12, 2), np.int64)
    mb.op("GREATER", [x, mb.const("zero", np.array(0.0, F32))], [cond])
    mb.op("WHERE", [cond], [idx])
    mb.output(add(idx))
    return mb.build()


def test_nodes_after_where_run_on_the_cpu_after_each_invoke(backend: str) -> None:
    mb = ModelBuilder()

    def cast_and_scale(idx: int) -> int:
        f, y = mb.tensor("f", (12, 2), F32), mb.tensor("y", (12, 2), F32)
        mb.op("CAST", [idx], [f])
        mb.op("MUL", [f, mb.const("half", np.array(0.5, F32))], [y])
        return y

    model = _where_then(mb, cast_and_scale)
    ref, it = LiteRT(model_content=model), Interpreter(model_content=model, backend=backend)
    for interp in (ref, it):
        interp.allocate_tensors()
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((4, 3)).astype(F32)
        outs = []
        for interp in (ref, it):
            interp.set_tensor(0, x)
            interp.invoke()
            outs.append(interp.get_tensor(interp.get_output_details()[0]["index"]))
        assert_same(outs[1], outs[0], what=f"seed {seed}")
        assert outs[1].shape == (int((x > 0).sum()), 2)
    assert it.get_plan()["cpu_after_invoke"] == [2, 3]  # CAST, MUL
    if backend == "webgpu":
        with pytest.raises(ValueError, match="computed on the cpu after each invoke"):
            it.get_output_gpu(it.get_output_details()[0]["index"])


def test_a_node_after_where_without_a_cpu_kernel_is_refused_at_allocate() -> None:
    mb = ModelBuilder()

    def custom(idx: int) -> int:
        y = mb.tensor("y", (12, 2), np.int64)
        mb.custom_op("NoSuchOp", [idx], [y])
        return y

    it = Interpreter(model_content=_where_then(mb, custom))
    with pytest.raises(UnsupportedOpError, match=r"NoSuchOp.*node 2.*shape comes from the data"):
        it.allocate_tensors()


def test_shapes_given_by_input_values_run_after_each_invoke(backend: str) -> None:
    """RANGE up to an input's value, and FILL with dims from an input: their outputs' dims are -1 in the
    signature and the stored 1 cannot stand in, so they run on the cpu after each invoke, as LiteRT sizes them."""
    mb = ModelBuilder()
    limit, dims = mb.input("limit", (), np.int32), mb.input("dims", (2,), np.int32)
    steps, doubled = mb.tensor("steps", (1,), np.int32, shape_signature=(-1,)), \
        mb.tensor("doubled", (1,), np.int32, shape_signature=(-1,))
    mb.op("RANGE", [mb.const("start", np.array(0, np.int32)), limit, mb.const("delta", np.array(1, np.int32))],
          [steps])
    mb.op("MUL", [steps, mb.const("two", np.array(2, np.int32))], [doubled])
    filled = mb.tensor("filled", (1, 1), F32, shape_signature=(-1, -1))
    mb.op("FILL", [dims, mb.const("value", np.array(1.5, F32))], [filled])
    mb.output(doubled)
    mb.output(filled)
    model = mb.build()
    ref, it = LiteRT(model_content=model), Interpreter(model_content=model, backend=backend)
    for interp in (ref, it):
        interp.allocate_tensors()
    for n, d in ((3, (2, 4)), (7, (1, 1)), (1, (3, 2))):
        outs = []
        for interp in (ref, it):
            interp.set_tensor(0, np.array(n, np.int32))
            interp.set_tensor(1, np.array(d, np.int32))
            interp.invoke()
            outs.append([interp.get_tensor(o["index"]) for o in interp.get_output_details()])
        for k in range(2):
            assert_same(outs[1][k], outs[0][k], what=f"limit {n}, dims {d}, output {k}")
    assert it.get_plan()["cpu_after_invoke"] == [0, 1, 2]


@pytest.mark.parametrize("name", ["conv_dynamic", "dense_dynamic"])
def test_a_batch_of_zero_gives_empty_outputs_as_litert(name: str, backend: str) -> None:
    """LiteRT's builtin kernels run a batch of 0 to empty outputs; gpulite's cpu conv kernel
    raised an IndexError from its (empty) list of row chunks."""
    from ai_edge_litert.interpreter import OpResolverType

    model = _load(name)
    ref = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it = Interpreter(model_content=model, backend=backend)
    shape = [0, *ref.get_input_details()[0]["shape"][1:]]
    for interp in (ref, it):
        interp.resize_tensor_input(0, shape)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], np.zeros(shape, F32))
        interp.invoke()
    for mine, theirs in zip(it.get_output_details(), ref.get_output_details(), strict=True):
        assert it.get_tensor(mine["index"]).shape == ref.get_tensor(theirs["index"]).shape
        assert 0 in ref.get_tensor(theirs["index"]).shape
