"""ZEROS_LIKE against LiteRT (the op added by the "Adding an op" walk-through, docs/architecture.md).

Each case copies the input twice (RESHAPE, a copy on every backend and dtype-blind on the
GPU) before the ZEROS_LIKE, so the zeros land in the arena slot of the first copy: a kernel
that skipped writing would leave the input's values there.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op

SHAPES = {"nhwc": (1, 5, 7, 3), "vector": (9,)}


def zeros_like_model(shape: tuple[int, ...], dtype) -> bytes:
    """``concat([zeros_like(b), b])`` with ``b = reshape(reshape(x))``, along axis 0."""
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype)
    a, b, z = (mb.tensor(n, shape, dtype) for n in ("a", "b", "z"))
    y = mb.tensor("y", (2 * shape[0], *shape[1:]), dtype)
    mb.op("RESHAPE", [x], [a], new_shape=list(shape))
    mb.op("RESHAPE", [a], [b], new_shape=list(shape))
    mb.op("ZEROS_LIKE", [b], [z])
    mb.op("CONCATENATION", [z, b], [y], axis=0)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64], ids=["float32", "int32", "int64"])
def test_zeros_like(dtype, shape: str, backend: str) -> None:
    x = np.random.default_rng(40).integers(1, 50, SHAPES[shape]).astype(dtype)
    check_op(zeros_like_model(SHAPES[shape], dtype), [x], backend)


@pytest.mark.parametrize("shape", [(2, 3), ()], ids=["matrix", "scalar"])
def test_zeros_like_alone_is_the_output(shape: tuple[int, ...], backend: str) -> None:
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    y = mb.tensor("y", shape, np.float32)
    mb.op("ZEROS_LIKE", [x], [y])
    mb.output(y)
    check_op(mb.build(), [np.full(shape, np.nan, np.float32)], backend)


def test_zeros_like_follows_a_resized_input(backend: str) -> None:
    """The shape rule: after resize_tensor_input the zeros take the new shape (x + zeros_like(x))."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 2), np.float32)
    z, y = mb.tensor("z", (1, 4, 4, 2), np.float32), mb.tensor("y", (1, 4, 4, 2), np.float32)
    mb.op("ZEROS_LIKE", [x], [z])
    mb.op("ADD", [z, x], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build(), backend=backend)
    it.resize_tensor_input(0, [2, 3, 5, 2])
    it.allocate_tensors()
    xs = np.random.default_rng(41).standard_normal((2, 3, 5, 2)).astype(np.float32)
    it.set_tensor(it.get_input_details()[0]["index"], xs)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), xs)


def test_zeros_like_refuses_int8() -> None:
    """LiteRT's ZEROS_LIKE takes float32, int32 and int64 only; so does gpulite."""
    mb = ModelBuilder()
    x = mb.input("x", (4,), np.int8)
    y = mb.tensor("y", (4,), np.int8)
    mb.op("ZEROS_LIKE", [x], [y])
    mb.output(y)
    with pytest.raises(UnsupportedOpError, match=r"ZEROS_LIKE.*int8"):
        Interpreter(model_content=mb.build(), backend="cpu").allocate_tensors()
