"""Unary and binary math ops of :mod:`gpulite.backends.cpu.kernels.math_ops` against LiteRT.

Unary: ABS, NEG, SQUARE, SIGN, FLOOR, CEIL, ROUND, LOG, SIN, COS, ELU, GELU (both forms),
LOG_SOFTMAX. Binary: FLOOR_DIV, FLOOR_MOD, POW with broadcasting and their integer dtypes.
Inputs hit the edges: halves for ROUND, zeros and negatives for LOG and SIGN, mixed signs for
the floor ops.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


def _halves(rng, shape):
    return (rng.integers(-20, 20, shape) / 2).astype(np.float32)


def _log_inputs(rng, shape):
    x = rng.uniform(0, 50, shape).astype(np.float32)
    x.flat[:3] = (0.0, -1.0, 1e-30)  # -inf, NaN, a denormal-adjacent value
    return x


FLOAT_INPUTS = {
    "ABS": lambda rng, s: rng.uniform(-10, 10, s),
    "NEG": lambda rng, s: rng.uniform(-10, 10, s),
    "SQUARE": lambda rng, s: rng.uniform(-10, 10, s),
    "SIGN": lambda rng, s: np.concatenate([[0.0, -0.0], rng.uniform(-3, 3, int(np.prod(s)) - 2)]).reshape(s),
    "FLOOR": _halves,
    "CEIL": _halves,
    "ROUND": _halves,
    "LOG": _log_inputs,
    "SIN": lambda rng, s: rng.uniform(-20, 20, s),
    "COS": lambda rng, s: rng.uniform(-20, 20, s),
    "ELU": lambda rng, s: rng.uniform(-6, 6, s),
    "GELU": lambda rng, s: rng.uniform(-8, 8, s),
    "LOG_SOFTMAX": lambda rng, s: rng.uniform(-30, 30, s),
}


def unary_model(op: str, shape, dtype=np.float32, out_dtype=None, **options) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype)
    y = mb.tensor("y", shape, out_dtype or dtype)
    mb.op(op, [x], [y], **options)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("shape", [(4, 37), (2, 3, 5, 7)], ids=["2d", "4d"])
@pytest.mark.parametrize("op", list(FLOAT_INPUTS))
def test_unary_float(op: str, shape, backend: str) -> None:
    x = FLOAT_INPUTS[op](_rng(op, shape), shape).astype(np.float32)
    check_op(unary_model(op, shape), [x], backend)


@pytest.mark.parametrize("approximate", [False, True], ids=["exact", "approximate"])
def test_gelu_forms(approximate: bool, backend: str) -> None:
    # The two forms differ by up to ~5e-4 near |x| = 2: a kernel ignoring the option fails.
    x = np.linspace(-6, 6, 241, dtype=np.float32).reshape(1, 241)
    check_op(unary_model("GELU", x.shape, approximate=approximate), [x], backend)


@pytest.mark.parametrize(("op", "dtype"), [("ABS", np.int32), ("NEG", np.int32), ("NEG", np.int64),
                                           ("SIGN", np.int32), ("ABS", np.int16)])
def test_unary_integer(op: str, dtype, backend: str) -> None:
    x = _rng(op, dtype).integers(-1000, 1000, (3, 11)).astype(dtype)
    check_op(unary_model(op, x.shape, dtype), [x], backend)


def test_log_softmax_is_per_row(backend: str) -> None:
    """Rows of very different magnitudes: a softmax over the wrong axis shows at once."""
    x = np.stack([np.linspace(-1, 1, 9), np.linspace(50, 90, 9), np.full(9, -100.0)]).astype(np.float32)
    check_op(unary_model("LOG_SOFTMAX", x.shape), [x], backend)


BINARY_SHAPES = {"same": ((3, 4, 5), (3, 4, 5)), "row": ((3, 4, 5), (5,)), "both": ((3, 1, 5), (1, 4, 1)),
                 "scalar": ((2, 6), ())}


def binary_model(op: str, a_shape, b_shape, dtype, b_const=None) -> bytes:
    mb = ModelBuilder()
    a = mb.input("a", a_shape, dtype)
    b = mb.const("b", b_const) if b_const is not None else mb.input("b", b_shape, dtype)
    y = mb.tensor("y", np.broadcast_shapes(tuple(a_shape), tuple(b_shape)), dtype)
    mb.op(op, [a, b], [y])
    mb.output(y)
    return mb.build()


def _binary_inputs(op: str, dtype, sa, sb, rng):
    if op == "POW":
        if np.dtype(dtype).kind == "f":
            return rng.uniform(0.1, 4, sa).astype(dtype), rng.uniform(-3, 3, sb).astype(dtype)
        return rng.integers(-5, 6, sa).astype(dtype), rng.integers(0, 7, sb).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a = rng.uniform(-20, 20, sa).astype(dtype)
        b = (rng.choice([-1, 1], sb) * rng.uniform(0.5, 6, sb)).astype(dtype)
        a.flat[0] = 6.0  # an exact multiple: fmod gives 0, which must not move
        b.flat[0] = -3.0
        return a, b
    a = rng.integers(-50, 50, sa).astype(dtype)
    b = (rng.choice([-1, 1], sb) * rng.integers(1, 9, sb)).astype(dtype)
    return a, b


@pytest.mark.parametrize("shapes", list(BINARY_SHAPES))
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["float32", "int32"])
@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD", "POW"])
def test_binary(op: str, dtype, shapes: str, backend: str) -> None:
    sa, sb = BINARY_SHAPES[shapes]
    a, b = _binary_inputs(op, dtype, sa, sb, _rng(op, dtype, shapes))
    check_op(binary_model(op, sa, sb, dtype), [a, b], backend)


@pytest.mark.parametrize(("op", "dtype"), [("FLOOR_MOD", np.int64), ("FLOOR_DIV", np.int16),
                                           ("FLOOR_MOD", np.int8)])
def test_binary_narrow_and_wide_ints(op: str, dtype, backend: str) -> None:
    a, b = _binary_inputs(op, dtype, (4, 6), (6,), _rng(op, dtype))
    check_op(binary_model(op, (4, 6), (6,), dtype), [a, b], backend)


@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD", "POW"])
def test_binary_const_operand(op: str, backend: str) -> None:
    a, b = _binary_inputs(op, np.float32, (2, 3, 4), (4,), _rng(op, "const"))
    check_op(binary_model(op, (2, 3, 4), (4,), np.float32, b_const=b), [a], backend)


@pytest.mark.parametrize(("op", "b"), [("FLOOR_DIV", [1, 0, 2]), ("FLOOR_MOD", [0, 1, 1]), ("POW", [1, -1, 2])])
def test_integer_bad_constant_is_refused_at_allocate(op: str, b) -> None:
    model = binary_model(op, (3,), (3,), np.int32, b_const=np.array(b, np.int32))
    with pytest.raises(UnsupportedOpError, match=rf"{op}.*constant"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


@pytest.mark.parametrize(("op", "err"), [("FLOOR_DIV", ZeroDivisionError), ("FLOOR_MOD", ZeroDivisionError),
                                         ("POW", ValueError)])
def test_integer_bad_runtime_operand_fails_the_invoke(op: str, err) -> None:
    it = Interpreter(model_content=binary_model(op, (3,), (3,), np.int32), backend="cpu")
    it.allocate_tensors()
    a, b = it.get_input_details()
    it.set_tensor(a["index"], np.array([4, 5, 6], np.int32))
    it.set_tensor(b["index"], np.array([2, 0, -1], np.int32))
    with pytest.raises(err, match=op):
        it.invoke()


@pytest.mark.parametrize(("op", "dtype"), [("SQUARE", np.int32), ("LOG", np.int32), ("NEG", np.uint8),
                                           ("GELU", np.int32), ("FLOOR_DIV", np.int64), ("POW", np.int64)])
def test_unsupported_dtype_is_refused_at_allocate(op: str, dtype) -> None:
    model = binary_model(op, (3,), (3,), dtype) if op in ("FLOOR_DIV", "POW") else unary_model(op, (3,), dtype)
    with pytest.raises(UnsupportedOpError, match=rf"{op}.*{np.dtype(dtype)}"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


def test_resized_input_follows(backend: str) -> None:
    mb = ModelBuilder()
    x = mb.input("x", (1, 8), np.float32)
    y, z = mb.tensor("y", (1, 8), np.float32), mb.tensor("z", (1, 8), np.float32)
    mb.op("GELU", [x], [y])
    mb.op("FLOOR_MOD", [y, mb.const("m", np.array([0.75], np.float32))], [z])
    mb.output(z)
    check_op(mb.build(), [_rng("resize").uniform(-5, 5, (3, 10)).astype(np.float32)], backend)
