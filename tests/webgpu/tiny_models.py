"""Small models for the GPU-I/O, device and leak tests, with their numpy references."""

from __future__ import annotations

import numpy as np

from gpulite.testing.tflite_writer import ModelBuilder

F32 = np.float32
SHAPE = (1, 6, 5, 4)
C = np.linspace(-1, 1, SHAPE[-1]).astype(F32)


def chain() -> bytes:
    """y = sigmoid(x + c) * x: ADD, LOGISTIC, MUL (tests push single nodes onto the CPU)."""
    mb = ModelBuilder()
    x = mb.input("x", SHAPE, F32)
    a, s, y = (mb.tensor(n, SHAPE, F32) for n in ("a", "s", "y"))
    mb.op("ADD", [x, mb.const("c", C)], [a])
    mb.op("LOGISTIC", [a], [s])
    mb.op("MUL", [s, x], [y])
    mb.output(y)
    return mb.build()


def chain_ref(x: np.ndarray) -> np.ndarray:
    a = x + C
    return (1 / (1 + np.exp(-a)) * x).astype(F32)


def two_outputs() -> bytes:
    """relu(x) and x * x as two graph outputs (outputs that share one arena)."""
    mb = ModelBuilder()
    x = mb.input("x", SHAPE, F32)
    r, q = mb.tensor("r", SHAPE, F32), mb.tensor("q", SHAPE, F32)
    mb.op("RELU", [x], [r])
    mb.op("MUL", [x, x], [q])
    mb.output(r)
    mb.output(q)
    return mb.build()


def relu(shape: tuple[int, ...] = (1, 4, 4, 4)) -> bytes:
    """One RELU: the cheapest possible invoke, for long loops."""
    mb = ModelBuilder()
    x = mb.input("x", shape, F32)
    y = mb.tensor("y", shape, F32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    return mb.build()


def x_of(seed: int = 0, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-3, 3, shape).astype(F32)
