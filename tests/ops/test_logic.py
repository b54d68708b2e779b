"""Comparisons, LOGICAL_AND / OR / NOT and SELECT / SELECT_V2 against LiteRT.

Comparisons run over every dtype LiteRT takes, with broadcasting and ties (equal elements
are planted so EQUAL / LESS_EQUAL see them); int8/uint8 operands with different scales are
compared as reals after LiteRT's fixed-point rescale, which a raw code comparison fails.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op

COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
SHAPES = {"same": ((2, 3, 4), (2, 3, 4)), "row": ((2, 3, 4), (4,)), "both": ((3, 1, 4), (1, 5, 1)),
          "scalar": ((6,), ())}


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


def compare_model(op: str, sa, sb, dtype, qa=None, qb=None, b_const=None) -> bytes:
    mb = ModelBuilder()
    a = mb.input("a", sa, dtype, quant=qa)
    b = mb.const("b", b_const, quant=qb) if b_const is not None else mb.input("b", sb, dtype, quant=qb)
    y = mb.tensor("y", np.broadcast_shapes(tuple(sa), tuple(sb)), np.bool_)
    mb.op(op, [a, b], [y])
    mb.output(y)
    return mb.build()


def _pair(dtype, sa, sb, rng):
    """Small integers (as the dtype), so ties are common; ties planted where shapes allow."""
    a = rng.integers(-4, 5, sa).astype(dtype)
    b = rng.integers(-4, 5, sb).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a, b = a / 2, b / 2
    return a, b


@pytest.mark.parametrize("shapes", list(SHAPES))
@pytest.mark.parametrize("op", COMPARISONS)
def test_compare_float(op: str, shapes: str, backend: str) -> None:
    sa, sb = SHAPES[shapes]
    a, b = _pair(np.float32, sa, sb, _rng(op, shapes))
    check_op(compare_model(op, sa, sb, np.float32), [a, b], backend)


INT_TYPES = {"EQUAL": [np.int32, np.int64, np.int16], "NOT_EQUAL": [np.int32, np.int64],
             "LESS": [np.int32, np.int64, np.int16], "LESS_EQUAL": [np.int32, np.int64, np.int16],
             "GREATER": [np.int32, np.int64, np.int16], "GREATER_EQUAL": [np.int32, np.int64, np.int16]}


@pytest.mark.parametrize(("op", "dtype"), [(op, np.dtype(t).name) for op, ts in INT_TYPES.items() for t in ts])
def test_compare_int(op: str, dtype: str, backend: str) -> None:
    a, b = _pair(dtype, (3, 5), (5,), _rng(op, dtype))
    check_op(compare_model(op, (3, 5), (5,), dtype), [a, b], backend)


@pytest.mark.parametrize("op", COMPARISONS)
def test_compare_int16_quantized(op: str, backend: str) -> None:
    """LiteRT 2.3 rescales quantized int16 for EQUAL / NOT_EQUAL (as 8-bit) but compares the codes,
    scales aside, for LESS, LESS_EQUAL, GREATER, GREATER_EQUAL: rows of equal real values (b = 2a at
    half a's scale), of equal codes, and random ones tell the two apart for every op."""
    rng = _rng(op, "int16-quantized")
    a = rng.integers(-16000, 16000, (6, 64)).astype(np.int16)
    b = rng.integers(-32768, 32768, a.shape).astype(np.int16)
    b[:2] = 2 * a[:2]  # equal real values, different codes
    b[2:4] = a[2:4]  # equal codes, different real values
    model = compare_model(op, a.shape, b.shape, "int16", qa=(0.5, 0), qb=(0.25, 0))
    check_op(model, [a, b], backend)


def test_compare_unquantized_int16_not_equal_refused() -> None:
    """LiteRT 2.3 runs NOT_EQUAL on int16 only quantized: unquantized, it leaves the output unwritten."""
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError

    with pytest.raises(UnsupportedOpError, match="unwritten"):
        Interpreter(model_content=compare_model("NOT_EQUAL", (3, 5), (5,), "int16")).allocate_tensors()


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL"])
def test_compare_bool(op: str, backend: str) -> None:
    rng = _rng(op, "bool")
    a, b = rng.integers(0, 2, (4, 6)).astype(bool), rng.integers(0, 2, (6,)).astype(bool)
    check_op(compare_model(op, (4, 6), (6,), np.bool_), [a, b], backend)


QUANT = {  # (a scale, a zero point), (b scale, b zero point)
    "same-q": ((0.1, 3), (0.1, 3)),
    "different-q": ((0.05, -10), (0.2, 4)),
    "near-ties": ((0.1, 0), (0.0999, 1)),
}


@pytest.mark.parametrize("q", list(QUANT))
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", COMPARISONS)
def test_compare_quantized(op: str, dtype: str, q: str, backend: str) -> None:
    (sa, za), (sb, zb) = QUANT[q]
    if dtype == "uint8":
        za, zb = za + 128, zb + 128
    rng = _rng(op, dtype, q)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = rng.integers(lo, hi + 1, (8, 16)).astype(dtype)
    # b holds a's real values re-expressed in b's quantization where they fit: near-exact ties.
    real = (a.astype(np.float64) - za) * sa
    b = np.clip(np.rint(real / sb) + zb, lo, hi).astype(dtype)
    b[::2] = rng.integers(lo, hi + 1, b[::2].shape)
    model = compare_model(op, a.shape, b.shape, dtype, qa=(sa, za), qb=(sb, zb))
    check_op(model, [a, b], backend)


def test_compare_const_operand(backend: str) -> None:
    a = _rng("const").uniform(-2, 2, (3, 7)).astype(np.float32)
    check_op(compare_model("LESS", a.shape, (7,), np.float32, b_const=np.linspace(-1, 1, 7, dtype=np.float32)),
             [a], backend)


@pytest.mark.parametrize(("op", "dtype"), [("LESS", np.bool_)])
def test_compare_dtype_litert_refuses(op: str, dtype, backend: str) -> None:
    it = Interpreter(model_content=compare_model(op, (4,), (4,), dtype), backend=backend)
    with pytest.raises(UnsupportedOpError, match=rf"{op}.*{np.dtype(dtype)}"):
        it.allocate_tensors()


def test_compare_unquantized_int8_is_refused() -> None:
    it = Interpreter(model_content=compare_model("EQUAL", (4,), (4,), np.int8), backend="cpu")
    with pytest.raises(UnsupportedOpError, match="quantized per tensor"):
        it.allocate_tensors()


def logical_model(op: str, shapes) -> bytes:
    mb = ModelBuilder()
    ins = [mb.input(f"x{i}", s, np.bool_) for i, s in enumerate(shapes)]
    out_shape = np.broadcast_shapes(*map(tuple, shapes))
    y = mb.tensor("y", out_shape, np.bool_)
    mb.op(op, ins, [y])
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("shapes", ["same", "row", "both"])
@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical_binary(op: str, shapes: str, backend: str) -> None:
    rng = _rng(op, shapes)
    sa, sb = SHAPES[shapes]
    a, b = rng.integers(0, 2, sa).astype(bool), rng.integers(0, 2, sb).astype(bool)
    check_op(logical_model(op, [sa, sb]), [a, b], backend)


def test_logical_not(backend: str) -> None:
    x = _rng("not").integers(0, 2, (3, 9)).astype(bool)
    check_op(logical_model("LOGICAL_NOT", [x.shape]), [x], backend)


def test_logical_refuses_float() -> None:
    mb = ModelBuilder()
    a, b = mb.input("a", (3,), np.float32), mb.input("b", (3,), np.float32)
    y = mb.tensor("y", (3,), np.bool_)
    mb.op("LOGICAL_AND", [a, b], [y])
    mb.output(y)
    with pytest.raises(UnsupportedOpError, match=r"LOGICAL_AND.*bool"):
        Interpreter(model_content=mb.build(), backend="cpu").allocate_tensors()


def select_model(op: str, sc, sx, sy, dtype, out_shape=None) -> bytes:
    mb = ModelBuilder()
    c = mb.input("c", sc, np.bool_)
    x, y = mb.input("x", sx, dtype), mb.input("y", sy, dtype)
    shape = out_shape or (np.broadcast_shapes(tuple(sc), tuple(sx), tuple(sy)) if op == "SELECT_V2" else sx)
    o = mb.tensor("o", shape, dtype)
    mb.op(op, [c, x, y], [o])
    mb.output(o)
    return mb.build()


SELECT_SHAPES = {  # condition, x, y
    "SELECT": {"same": ((2, 3, 4), (2, 3, 4), (2, 3, 4)), "rows": ((2,), (2, 3, 4), (2, 3, 4)),
               "scalar": ((), (3, 4), (3, 4))},
    "SELECT_V2": {"same": ((2, 3, 4), (2, 3, 4), (2, 3, 4)), "cond-row": ((4,), (2, 3, 4), (2, 3, 4)),
                  "all-broadcast": ((3, 1), (1, 4), (2, 1, 1)), "scalar-y": ((2, 5), (2, 5), ())},
}
SELECT_CASES = [(op, s) for op, shapes in SELECT_SHAPES.items() for s in shapes]


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "int8", "int16", "bool"])
@pytest.mark.parametrize(("op", "shapes"), SELECT_CASES, ids=[f"{o}-{s}" for o, s in SELECT_CASES])
def test_select(op: str, shapes: str, dtype: str, backend: str) -> None:
    sc, sx, sy = SELECT_SHAPES[op][shapes]
    rng = _rng(op, shapes, dtype)
    c = rng.integers(0, 2, sc).astype(bool)
    x, y = (rng.integers(-100, 100, s).astype(dtype) for s in (sx, sy))
    check_op(select_model(op, sc, sx, sy, dtype), [c, x, y], backend)


@pytest.mark.parametrize(("op", "sc", "sx", "sy"), [("SELECT", (3,), (2, 3), (2, 3)),
                                                    ("SELECT", (2, 3), (2, 3), (2, 1)),
                                                    ("SELECT_V2", (4,), (2, 3), (2, 3))])
def test_select_bad_shapes(op: str, sc, sx, sy) -> None:
    model = select_model(op, sc, sx, sy, np.float32, out_shape=sx)
    with pytest.raises(ShapeError, match=op):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


def test_select_refuses_float_condition() -> None:
    mb = ModelBuilder()
    c, x, y = (mb.input(n, (3,), np.float32) for n in "cxy")
    o = mb.tensor("o", (3,), np.float32)
    mb.op("SELECT_V2", [c, x, y], [o])
    mb.output(o)
    with pytest.raises(UnsupportedOpError, match=r"SELECT_V2.*bool condition"):
        Interpreter(model_content=mb.build(), backend="cpu").allocate_tensors()


def test_transformer_mask_chain_resized(backend: str) -> None:
    """A converter's attention-mask chain: LESS -> LOGICAL_NOT -> SELECT_V2, fed at a new size."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 4), np.float32)
    lt, keep = mb.tensor("lt", (1, 4), np.bool_), mb.tensor("keep", (1, 4), np.bool_)
    y = mb.tensor("y", (1, 4), np.float32)
    mb.op("LESS", [x, mb.const("zero", np.zeros((), np.float32))], [lt])
    mb.op("LOGICAL_NOT", [lt], [keep])
    mb.op("SELECT_V2", [keep, x, mb.const("neg", np.array(-1e9, np.float32))], [y])
    mb.output(y)
    check_op(mb.build(), [_rng("mask").uniform(-1, 1, (3, 7)).astype(np.float32)], backend)


@pytest.mark.parametrize("op", ["LESS", "LOGICAL_OR"])
def test_shapes_that_do_not_broadcast_fail_at_allocate(op: str) -> None:
    mb = ModelBuilder()
    dtype = np.bool_ if op.startswith("LOGICAL") else np.float32
    a, b = mb.input("a", (2, 3), dtype), mb.input("b", (4,), dtype)
    y = mb.tensor("y", (2, 3), np.bool_)
    mb.op(op, [a, b], [y])
    mb.output(y)
    with pytest.raises(ShapeError, match=rf"\({op}\).*do not broadcast"):
        Interpreter(model_content=mb.build(), backend="cpu").allocate_tensors()


def where_model(shape, dtype) -> bytes:
    """WHERE over an input; the output is stored at its bound (every element true)."""
    mb = ModelBuilder()
    c = mb.input("c", shape, dtype)
    y = mb.tensor("y", (int(np.prod(shape)), len(shape)), np.int64)
    mb.op("WHERE", [c], [y])
    mb.output(y)
    return mb.build()


WHERE_DTYPES = [np.bool_, np.float32, np.int32, np.int64, np.int8, np.uint8, np.uint32]


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 2)], ids=str)
@pytest.mark.parametrize("dtype", WHERE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_where(dtype, shape, backend: str) -> None:
    """The coordinates of the non-zero elements, as many rows as the data has (LiteRT's order)."""
    values = _rng("where", np.dtype(dtype).name, shape).integers(0, 3, shape) * (_rng("w", shape).random(shape) < 0.4)
    values.flat[[0, -1]] = 2, 0  # some true, some false (LiteRT refuses to hand out an empty result)
    check_op(where_model(shape, dtype), [values.astype(dtype)], backend)


def test_where_with_nothing_true_gives_no_rows() -> None:
    # (LiteRT's get_tensor refuses an empty result: "Invalid tensor size"; numpy is the reference here.)
    it = Interpreter(model_content=where_model((2, 3), np.bool_), backend="cpu")
    it.allocate_tensors()
    for x in (np.ones((2, 3), np.bool_), np.zeros((2, 3), np.bool_)):  # a full result, then none
        it.set_tensor(0, x)
        it.invoke()
        got = it.get_tensor(it.get_output_details()[0]["index"])
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.argwhere(x))
