"""Run-time indices out of range fail the invoke with the same error on every backend, as
LiteRT fails it: on webgpu the indices are checked on the GPU (kernels/index_check.py) and the
error read back with the outputs, the nodes staying on the GPU (the suite's placement check)."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import run_litert


def _gather_model(op: str, params_shape, idx_shape, idx_dtype, **options) -> bytes:
    """``op`` of a float input by indices computed in the graph (int32 ``ids + 0``: an
    intermediate tensor, as a model's token ids are), followed by an ADD so the outputs come from another node."""
    mb = ModelBuilder()
    x = mb.input("x", params_shape, np.float32)
    ids = mb.input("ids", idx_shape, idx_dtype)
    mid = ids
    if idx_dtype == np.int32:  # (the GPU has no int64 ADD: int64 ids go straight in)
        zero = mb.const("zero", np.zeros(idx_shape, idx_dtype))
        mid = mb.tensor("mid", idx_shape, idx_dtype)
        mb.op("ADD", [ids, zero], [mid])
    if op == "GATHER":
        axis = options.get("axis", 0)
        bd = options.get("batch_dims", 0)
        shape = params_shape[:axis] + idx_shape[bd:] + params_shape[axis + 1:]
    elif op == "GATHER_ND":
        shape = idx_shape[:-1] + params_shape[idx_shape[-1]:]
    else:  # EMBEDDING_LOOKUP: ids first
        shape = idx_shape + params_shape[1:]
    g = mb.tensor("g", shape, np.float32)
    mb.op(op, [mid, x] if op == "EMBEDDING_LOOKUP" else [x, mid], [g], **options)
    one = mb.const("one", np.ones((1,), np.float32))
    y = mb.tensor("y", shape, np.float32)
    mb.op("ADD", [g, one], [y])
    mb.output(y)
    return mb.build()


def _invoke(model: bytes, backend: str, x: np.ndarray, ids: np.ndarray) -> np.ndarray:
    it = Interpreter(model_content=model, backend=backend)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.set_tensor(it.get_input_details()[1]["index"], ids)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _ids(dtype, shape, high: int, bad: dict[tuple, int]) -> np.ndarray:
    v = np.random.default_rng(3).integers(0, high, shape).astype(dtype)
    for at, value in bad.items():
        v[at] = value
    return v


# id: (op, params shape, ids shape, ids dtype, bad entries {position: value}, options)
CASES = {
    "gather-past-end": ("GATHER", (6, 3), (5,), np.int32, {(3,): 6}, {}),
    "gather-negative": ("GATHER", (6, 3), (5,), np.int32, {(1,): -2, (4,): 9}, {}),
    "gather-int64": ("GATHER", (4, 6, 2), (2, 3), np.int64, {(1, 2): 6}, {"axis": 1}),
    "gather-int64-beyond-int32": ("GATHER", (6, 3), (4,), np.int64, {(2,): -(1 << 40)}, {}),
    "gather-batch-dims": ("GATHER", (2, 5, 3), (2, 4), np.int32, {(1, 3): 5}, {"axis": 1, "batch_dims": 1}),
    # many rows: the bad ones are found across the workgroup's threads, the first one reported
    "gather-many": ("GATHER", (1000, 2), (20000,), np.int32, {(12345,): 1000, (17,): -1}, {}),
    "gather-nd": ("GATHER_ND", (4, 5, 2), (3, 2), np.int32, {(2, 1): 5}, {}),
    "gather-nd-first-of-two": ("GATHER_ND", (4, 5), (2, 3, 2), np.int32, {(1, 2, 0): 4, (0, 1, 1): -1}, {}),
    "gather-nd-int64": ("GATHER_ND", (3, 4), (5, 1), np.int64, {(4, 0): 3}, {}),
    "embedding-lookup": ("EMBEDDING_LOOKUP", (7, 4), (6,), np.int32, {(5,): 7, (2,): -1}, {}),
}


@pytest.mark.parametrize("case", CASES)
def test_index_out_of_range_fails_the_invoke(case: str, backend: str) -> None:
    op, ps, ishape, dt, bad, options = CASES[case]
    model = _gather_model(op, ps, ishape, dt, **options)
    x = np.random.default_rng(4).standard_normal(ps).astype(np.float32)
    axis = options.get("axis", 0)
    good = _ids(dt, ishape, ps[axis] if op != "GATHER_ND" else min(ps[:ishape[-1]]), {})
    np.testing.assert_array_equal(_invoke(model, backend, x, good), run_litert(model, [x, good])[0])
    ids = _ids(dt, ishape, ps[axis] if op != "GATHER_ND" else min(ps[:ishape[-1]]), bad)
    with pytest.raises(RuntimeError):
        run_litert(model, [x, ids])
    with pytest.raises(IndexError) as cpu:
        _invoke(model, "cpu", x, ids)
    with pytest.raises(IndexError) as got:
        _invoke(model, backend, x, ids)
    assert str(got.value) == str(cpu.value)


def test_invoke_after_an_index_error_runs(backend: str) -> None:
    """The error leaves the interpreter usable: the next invoke with good ids gives LiteRT's values."""
    model = _gather_model("GATHER", (6, 3), (4,), np.int32)
    x = np.random.default_rng(5).standard_normal((6, 3)).astype(np.float32)
    it = Interpreter(model_content=model, backend=backend)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    for ids, fails in ((np.array([0, 7, 1, 2], np.int32), True), (np.array([5, 0, 1, 2], np.int32), False)):
        it.set_tensor(it.get_input_details()[1]["index"], ids)
        if fails:
            with pytest.raises(IndexError, match=r"span \[0, 7\]"):
                it.invoke()
        else:
            it.invoke()
            np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]),
                                          run_litert(model, [x, ids])[0])


def test_outputs_on_gpu_still_raise() -> None:
    """With outputs left on the GPU nothing is read back, but the check's words still are."""
    from tests.webgpu.support import adapter_problem

    if adapter_problem() is not None:
        pytest.skip(adapter_problem())
    model = _gather_model("GATHER", (6, 3), (4,), np.int32)
    it = Interpreter(model_content=model, backend="webgpu", outputs_on_gpu=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.ones((6, 3), np.float32))
    it.set_tensor(it.get_input_details()[1]["index"], np.array([1, 2, 6, 0], np.int32))
    with pytest.raises(IndexError, match=r"span \[0, 6\], expected \[0, 6\)"):
        it.invoke()
    it.set_tensor(it.get_input_details()[1]["index"], np.array([1, 2, 5, 0], np.int32))
    it.invoke()
    assert it.get_output_gpu(it.get_output_details()[0]["index"]).shape == (4, 3)


def _scatter_model(idx_shape, out_shape) -> bytes:
    """SCATTER_ND of float updates at int32 indices computed in the graph (``ids + 0``), then an ADD."""
    mb = ModelBuilder()
    ids = mb.input("ids", idx_shape, np.int32)
    k = idx_shape[-1]
    upd = mb.input("upd", (*idx_shape[:-1], *out_shape[k:]), np.float32)
    mid = mb.tensor("mid", idx_shape, np.int32)
    mb.op("ADD", [ids, mb.const("zero", np.zeros(idx_shape, np.int32))], [mid])
    s = mb.tensor("s", out_shape, np.float32)
    mb.op("SCATTER_ND", [mid, upd, mb.const("shape", np.array(out_shape, np.int32))], [s])
    y = mb.tensor("y", out_shape, np.float32)
    mb.op("ADD", [s, mb.const("one", np.ones((1,), np.float32))], [y])
    mb.output(y)
    return mb.build()


# id: (indices shape, output shape, bad entries {position: value})
SCATTER_CASES = {
    # past its dimension, though the flat offset (0 * 4 + 5) lies inside the output: LiteRT 2.3 fails
    "past-one-dim": ((3, 2), (3, 4), {(1, 1): 5}),
    "negative-inside-flat": ((2, 2), (3, 4), {(1,): [1, -1]}),
    "first-of-two": ((2, 3, 2), (4, 5, 2), {(1, 2, 0): 4, (0, 1, 1): -1}),
    "rows-many": ((1000, 1), (50, 3), {(777, 0): 50, (901, 0): -3}),
}


@pytest.mark.parametrize("case", SCATTER_CASES)
def test_scatter_nd_index_out_of_range_fails_the_invoke(case: str, backend: str) -> None:
    ishape, oshape, bad = SCATTER_CASES[case]
    model = _scatter_model(ishape, oshape)
    k = ishape[-1]
    rng = np.random.default_rng(6)
    upd = rng.standard_normal((*ishape[:-1], *oshape[k:])).astype(np.float32)
    good = np.stack([rng.integers(0, d, ishape[:-1]) for d in oshape[:k]], axis=-1).astype(np.int32)
    it = Interpreter(model_content=model, backend=backend)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], good)
    it.set_tensor(it.get_input_details()[1]["index"], upd)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]),
                                  run_litert(model, [good, upd])[0])
    ids = good.copy()
    for at, value in bad.items():
        ids[at] = value
    with pytest.raises(RuntimeError):
        run_litert(model, [ids, upd])
    with pytest.raises(IndexError) as cpu:
        _invoke(model, "cpu", ids, upd)
    it.set_tensor(it.get_input_details()[0]["index"], ids)
    with pytest.raises(IndexError, match="scatter_nd index") as got:
        it.invoke()
    assert str(got.value) == str(cpu.value)
