"""Float and plain-integer elementwise math ops against LiteRT.

Binary ops: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, with numpy-style
broadcasting (runtime and constant second operand) and, for ADD/SUB/MUL/DIV, every fused
activation. Unary: EXP, SQRT, RSQRT.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ModelError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op, run_litert

BINARY = ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"]
FUSED = ["ADD", "SUB", "MUL", "DIV"]
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH"]
# (a shape, b shape): equal, per-channel, single value, both sides broadcasting, rank-mismatched,
# a rank-0 operand, and a rank-5 output (merged to at most 4 dims by the GPU kernel).
SHAPES = {
    "same": ((1, 5, 7, 3), (1, 5, 7, 3)),
    "channel": ((1, 5, 7, 3), (3,)),
    "single": ((1, 5, 7, 3), (1,)),
    "both": ((2, 1, 4), (1, 3, 1)),
    "rank": ((4, 1), (2, 3, 1, 5)),
    "scalar": ((2, 3, 4), ()),
    "rank5": ((1, 2, 3, 4, 5), (5,)),
}


def _values(op: str, shape: tuple[int, ...], rng: np.random.Generator, divisor: bool = False) -> np.ndarray:
    x = rng.uniform(-4, 4, shape).astype(np.float32)
    if divisor:  # keep away from 0 so the quotient stays well conditioned
        x = (np.sign(x) + (x == 0)) * rng.uniform(0.5, 2.0, shape).astype(np.float32)
    return x


def binary_model(op: str, a_shape, b_shape, dtype=np.float32, b_const: np.ndarray | None = None,
                 **options) -> bytes:
    mb = ModelBuilder()
    a = mb.input("a", a_shape, dtype)
    b = mb.const("b", b_const) if b_const is not None else mb.input("b", b_shape, dtype)
    y = mb.tensor("y", np.broadcast_shapes(tuple(a_shape), tuple(b_shape)), dtype)
    mb.op(op, [a, b], [y], **options)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("shapes", list(SHAPES))
@pytest.mark.parametrize("op", BINARY)
def test_binary_broadcast(op: str, shapes: str, backend: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{op}-{shapes}".encode()))
    sa, sb = SHAPES[shapes]
    a, b = _values(op, sa, rng), _values(op, sb, rng, divisor=op == "DIV")
    check_op(binary_model(op, sa, sb), [a, b], backend)


@pytest.mark.parametrize("op", BINARY)
def test_binary_const_operand(op: str, backend: str) -> None:
    rng = np.random.default_rng(7)
    b = _values(op, (7, 3), rng, divisor=op == "DIV")
    check_op(binary_model(op, (1, 5, 7, 3), (7, 3), b_const=b), [_values(op, (1, 5, 7, 3), rng)], backend)


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("op", FUSED)
def test_fused_activation(op: str, act: str, backend: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-8, 8, (2, 6, 6, 4)).astype(np.float32)  # results cross every clamp bound
    b = _values(op, (4,), rng, divisor=op == "DIV")
    model = binary_model(op, a.shape, b.shape, fused_activation_function=act)
    check_op(model, [a, b], backend)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_binary_integer(op: str, dtype, backend: str) -> None:
    rng = np.random.default_rng(11)
    a = rng.integers(-1000, 1000, (2, 3, 5)).astype(dtype)
    b = rng.integers(-1000, 1000, (3, 1)).astype(dtype)
    check_op(binary_model(op, a.shape, b.shape, dtype=dtype), [a, b], backend)


@pytest.mark.parametrize("act", ["RELU", "RELU6", "RELU_N1_TO_1"])
def test_integer_fused_activation(act: str, backend: str) -> None:
    rng = np.random.default_rng(12)
    a, b = (rng.integers(-10, 10, (4, 5)).astype(np.int32) for _ in range(2))
    check_op(binary_model("ADD", a.shape, b.shape, dtype=np.int32, fused_activation_function=act), [a, b], backend)


UNARY_INPUTS = {
    "EXP": lambda rng, s: rng.uniform(-10, 10, s),
    "SQRT": lambda rng, s: np.concatenate([[0.0], rng.uniform(0, 100, s[0] * s[1] - 1)]).reshape(s),
    "RSQRT": lambda rng, s: rng.uniform(0.01, 100, s),
    "NEG": lambda rng, s: rng.uniform(-10, 10, s),
    "ABS": lambda rng, s: rng.uniform(-10, 10, s),
    "SQUARE": lambda rng, s: rng.uniform(-10, 10, s),
}


@pytest.mark.parametrize("op", list(UNARY_INPUTS))
def test_unary(op: str, backend: str) -> None:
    x = UNARY_INPUTS[op](np.random.default_rng(5), (16, 33)).astype(np.float32)
    mb = ModelBuilder()
    a = mb.input("x", x.shape, np.float32)
    y = mb.tensor("y", x.shape, np.float32)
    mb.op(op, [a], [y])
    mb.output(y)
    check_op(mb.build(), [x], backend)


def test_integer_div_is_rejected_at_allocate() -> None:
    # numpy floors integer quotients where TFLite truncates, so the CPU kernel refuses them.
    it = Interpreter(model_content=binary_model("DIV", (4,), (4,), dtype=np.int32), backend="cpu")
    with pytest.raises(UnsupportedOpError, match=r"DIV .*int32"):
        it.allocate_tensors()


def test_mixed_dtypes_are_rejected_at_allocate() -> None:
    mb = ModelBuilder()
    a, b = mb.input("a", (4,), np.float32), mb.input("b", (4,), np.int32)
    y = mb.tensor("y", (4,), np.float32)
    mb.op("ADD", [a, b], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build(), backend="cpu")
    with pytest.raises(ModelError, match=r"input 0 .* is float32 but input 1 .* is int32; ADD needs them to be of one"):
        it.allocate_tensors()


@pytest.mark.parametrize("op", ["ADD", "MUL", "SQUARED_DIFFERENCE"])
def test_resized_input_follows_broadcast(op: str, backend: str) -> None:
    # The model is written for (1, 5, 7, 3); feeding (2, 4, 6, 3) resizes the input, and the
    # output shape comes from the shape rule (broadcast against the constant channel operand).
    rng = np.random.default_rng(13)
    b = _values(op, (3,), rng)
    x = _values(op, (2, 4, 6, 3), rng)
    check_op(binary_model(op, (1, 5, 7, 3), (3,), b_const=b), [x], backend)


@pytest.mark.parametrize("op", ["EXP", "RSQRT"])
def test_resized_unary(op: str, backend: str) -> None:
    x = UNARY_INPUTS[op](np.random.default_rng(14), (3, 40)).astype(np.float32)
    mb = ModelBuilder()
    a = mb.input("x", (1, 8), np.float32)
    y = mb.tensor("y", (1, 8), np.float32)
    mb.op(op, [a], [y])
    mb.output(y)
    check_op(mb.build(), [x], backend)


@pytest.mark.parametrize("op", ["MUL", "SUB", "DIV"])
@pytest.mark.parametrize("small_first", [False, True], ids=["small-second", "small-first"])
def test_small_runtime_operand_changes_between_invokes(op: str, small_first: bool) -> None:
    # A small broadcast operand is tiled into a long row (broadcast_tile.py); a runtime one
    # must be re-tiled on every invoke, which only a second invoke with new values shows.
    rng = np.random.default_rng(16)
    big_shape, small_shape = (1, 96, 96, 32), (1, 1, 1, 32)
    shapes = (small_shape, big_shape) if small_first else (big_shape, small_shape)
    m = binary_model(op, *shapes)
    it = Interpreter(model_content=m, backend="cpu")
    it.allocate_tensors()
    ins = [d["index"] for d in it.get_input_details()]
    big = _values(op, big_shape, rng)
    for _ in range(2):
        small = _values(op, small_shape, rng, divisor=True)
        feeds = [small, big] if small_first else [big, small]
        for i, v in zip(ins, feeds, strict=False):
            it.set_tensor(i, v)
        it.invoke()
        expected = run_litert(m, feeds)[0]
        got = it.get_tensor(it.get_output_details()[0]["index"])
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_channel_constant_on_large_tensor(op: str, backend: str) -> None:
    # Large enough that the constant is tiled over many rows rather than the whole tensor.
    rng = np.random.default_rng(18)
    c = _values(op, (32,), rng)
    check_op(binary_model(op, (2, 96, 96, 32), (32,), b_const=c), [_values(op, (2, 96, 96, 32), rng)], backend)
