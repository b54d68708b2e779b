"""SHAPE, RANK, FILL, RANGE, BROADCAST_TO, BROADCAST_ARGS, CAST, ONE_HOT, CUMSUM, REDUCE_PROD/ANY/ALL
against LiteRT. Output shapes come from LiteRT's own inference (``tests/ops/single_op.py``)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op
from tests.ops.single_op import C, In, single_op


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


@pytest.mark.parametrize("out_type", ["int32", "int64"])
def test_shape(out_type: str, backend: str) -> None:
    x = np.zeros((2, 3, 5), np.float32)
    check_op(*single_op("SHAPE", [In(x)], out_dtype=out_type, out_type=out_type.upper()), backend)


def test_shape_and_rank_follow_a_resized_input(backend: str) -> None:
    mb = ModelBuilder()
    x = mb.input("x", (1, 4), np.float32)
    s, r = mb.tensor("s", (2,), np.int32), mb.tensor("r", (), np.int32)
    mb.op("SHAPE", [x], [s], out_type="INT32")
    mb.op("RANK", [x], [r])
    mb.output(s, r)
    check_op(mb.build(), [np.ones((3, 6), np.float32)], backend)


def test_rank(backend: str) -> None:
    check_op(*single_op("RANK", [In(np.zeros((2, 1, 4, 3), np.int8))], out_dtype=np.int32), backend)


@pytest.mark.parametrize(("dtype", "value"), [("float32", 2.5), ("int32", -7), ("int64", 1 << 40), ("bool", True)])
def test_fill(dtype: str, value, backend: str) -> None:
    dims = np.array([2, 3, 4], np.int32)
    check_op(*single_op("FILL", [C(dims), In(np.array(value, dtype))], out_dtype=dtype), backend)


def test_fill_runtime_dims_match_stored_shape(backend: str) -> None:
    mb = ModelBuilder()
    d, v = mb.input("d", (2,), np.int64), mb.input("v", (), np.float32)
    y = mb.tensor("y", (3, 2), np.float32)
    mb.op("FILL", [d, v], [y])
    mb.output(y)
    check_op(mb.build(), [np.array([3, 2], np.int64), np.array(-1.5, np.float32)], backend)


def test_fill_runtime_dims_that_differ_fail_clearly() -> None:
    mb = ModelBuilder()
    d, v = mb.input("d", (2,), np.int32), mb.input("v", (), np.float32)
    y = mb.tensor("y", (3, 2), np.float32)
    mb.op("FILL", [d, v], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build(), backend="cpu")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.array([4, 2], np.int32))
    it.set_tensor(it.get_input_details()[1]["index"], np.array(1, np.float32))
    with pytest.raises(ShapeError, match=r"node 0 \(FILL\).*\[4, 2\]"):
        it.invoke()


RANGES = {"int-up": (2, 17, 3, "int32"), "int-down": (10, -3, -4, "int32"), "int64": (0, 5, 1, "int64"),
          "float": (0.5, 3.3, 0.1, "float32"), "float-down": (1.0, -1.0, -0.3, "float32")}


@pytest.mark.parametrize("const", [True, False], ids=["const", "runtime"])
@pytest.mark.parametrize("case", list(RANGES))
def test_range(case: str, const: bool, backend: str) -> None:
    """Constant bounds size the output at allocate; run-time ones are checked against the stored size."""
    start, limit, delta, dtype = RANGES[case]
    ins = [(C if const else In)(np.array(v, dtype)) for v in (start, limit, delta)]
    check_op(*single_op("RANGE", ins, out_dtype=dtype), backend)


def test_range_with_a_run_time_limit_after_a_resize_runs_after_each_invoke() -> None:
    """The stored shape cannot stand in after a resize: RANGE runs on the cpu after the invoke
    (gpulite.graph.resolve's tail), sized by the limit's value as LiteRT sizes it."""
    mb = ModelBuilder()
    x = mb.input("x", (2,), np.int32)
    limit, r = mb.tensor("limit", (), np.int32), mb.tensor("r", (2,), np.int32)
    mb.op("SUM", [x, mb.const("axis", np.array([0], np.int32))], [limit])
    mb.op("RANGE", [mb.const("a", np.array(0, np.int32)), limit, mb.const("c", np.array(1, np.int32))], [r])
    mb.output(r)
    check_op(mb.build(), [np.array([1, 2, 3], np.int32)], "cpu")


@pytest.mark.parametrize(("shape", "target"), [((3, 1), (2, 3, 4)), ((4,), (3, 4)), ((), (2, 2)),
                                                ((1, 1, 5), (1, 4, 5))])
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_broadcast_to(shape, target, dtype: str, backend: str) -> None:
    x = _rng(shape, dtype).integers(-5, 5, shape).astype(dtype)
    check_op(*single_op("BROADCAST_TO", [In(x), C(np.array(target, np.int32))], op_version=2), backend)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_broadcast_args(dtype: str, backend: str) -> None:
    a, b = np.array([2, 1, 4], dtype), np.array([3, 1], dtype)
    check_op(*single_op("BROADCAST_ARGS", [In(a), In(b)]), backend)


CASTS = [("float32", "int32"), ("float32", "int64"), ("float32", "bool"), ("float32", "float16"),
         ("float16", "float32"), ("int32", "float32"), ("int64", "int32"), ("int32", "int64"), ("bool", "float32"),
         ("bool", "int32"), ("int8", "float32"), ("uint8", "int32"), ("int32", "bool"), ("int32", "uint8"),
         ("int16", "int32"), ("float32", "int8"), ("float64", "float32")]


@pytest.mark.parametrize(("src", "dst"), CASTS, ids=[f"{a}-to-{b}" for a, b in CASTS])
def test_cast(src: str, dst: str, backend: str) -> None:
    rng = _rng(src, dst)
    if src.startswith("float"):
        x = rng.uniform(-100, 100, (4, 9)).astype(src)
        x.flat[:4] = (0.0, -0.7, 2.5, -2.5)  # truncation toward zero, a zero for bool
    elif src == "bool":
        x = rng.integers(0, 2, (4, 9)).astype(bool)
    else:
        lo, hi = max(np.iinfo(src).min, -100), min(np.iinfo(src).max, 100)
        x = rng.integers(lo, hi, (4, 9)).astype(src)
    check_op(*single_op("CAST", [In(x)], out_dtype=dst), backend)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize(("dtype", "on", "off"), [("float32", 1.0, 0.0), ("int32", 5, -2), ("bool", True, False)])
def test_one_hot(axis: int, dtype: str, on, off, backend: str) -> None:
    idx = np.array([[0, 3, 1], [4, -1, 2]], np.int32)  # 4 and -1 lie outside [0, 4): all off
    ins = [In(idx), C(np.array(4, np.int32)), C(np.array(on, dtype)), C(np.array(off, dtype))]
    check_op(*single_op("ONE_HOT", ins, out_dtype=dtype, axis=axis), backend)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_cumsum(dtype: str, axis: int, exclusive: bool, reverse: bool, backend: str) -> None:
    x = _rng(dtype, axis).integers(-50, 50, (3, 4, 5)).astype(dtype)
    if dtype == "float32":
        x = x * np.float32(0.37)
    check_op(*single_op("CUMSUM", [In(x), C(np.array(axis, np.int32))], exclusive=exclusive, reverse=reverse),
             backend)


@pytest.mark.parametrize("keep", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1]], ids=["one", "two", "negative"])
@pytest.mark.parametrize("op", ["REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL"])
def test_reduce_more(op: str, axes, keep: bool, backend: str) -> None:
    rng = _rng(op, axes, keep)
    if op == "REDUCE_PROD":
        x = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    else:
        x = rng.random((3, 4, 5)) < (0.9 if op == "REDUCE_ALL" else 0.1)
    check_op(*single_op(op, [In(x), C(np.array(axes, np.int32))], keep_dims=keep), backend)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_reduce_prod_int(dtype: str, backend: str) -> None:
    x = _rng("prod", dtype).integers(-3, 4, (2, 3, 4)).astype(dtype)
    check_op(*single_op("REDUCE_PROD", [In(x), C(np.array([1, 2], np.int32))], keep_dims=False), backend)


@pytest.mark.parametrize(("op", "ins", "kw"), [
    ("CAST", [In(np.zeros(3, np.float32))], {"out_dtype": np.complex128}),
    ("CUMSUM", [In(np.zeros(3, np.int8)), C(np.array(0, np.int32))], {}),
    ("REDUCE_ANY", [In(np.zeros(3, np.float32)), C(np.array([0], np.int32))], {}),
    ("ONE_HOT", [In(np.zeros(3, np.float32)), C(np.array(2, np.int32)), C(np.array(1, np.float32)),
                 C(np.array(0, np.float32))], {"out_shape": (2, 3)}),  # no options: axis 0, as LiteRT reads it
], ids=["cast-complex128", "cumsum-int8", "any-float", "one-hot-float-indices"])
def test_bad_dtypes_are_refused_at_allocate(op: str, ins, kw) -> None:
    from tests.ops.single_op import _build

    out_shape = kw.pop("out_shape", np.shape(ins[0].value) if op != "REDUCE_ANY" else ())
    model = _build(op, ins, out_shape, kw.get("out_dtype", ins[0].value.dtype), None, {})
    with pytest.raises(UnsupportedOpError, match=op):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()
