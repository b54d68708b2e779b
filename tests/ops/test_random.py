"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL against LiteRT: the same Philox stream
for given seeds, advancing from invoke to invoke."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.testing.tflite_writer import ModelBuilder
from tests.compare import assert_same


def _random_model(op: str, shape, seed: int, seed2: int) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (1,), np.float32)  # unused: a graph needs an input
    y = mb.tensor("y", shape, np.float32)
    mb.op(op, [mb.const("shape", np.array(shape, np.int32))], [y], seed=seed, seed2=seed2)
    z = mb.tensor("z", (1,), np.float32)
    mb.op("ADD", [x, x], [z])
    mb.output(y, z)
    return mb.build()


def _multinomial_model(batch: int, classes: int, samples: int, seed: int, seed2: int, out_dtype) -> bytes:
    mb = ModelBuilder()
    logits = mb.input("logits", (batch, classes), np.float32)
    y = mb.tensor("y", (batch, samples), out_dtype)
    mb.op("MULTINOMIAL", [logits, mb.const("n", np.array(samples, np.int32))], [y], seed=seed, seed2=seed2)
    mb.output(y)
    return mb.build()


def _invokes(model: bytes, feeds: list[np.ndarray], backend: str | None, times: int = 3) -> list[list[np.ndarray]]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    it = LiteRT(model_content=model) if backend is None else Interpreter(model_content=model, backend=backend)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), feeds, strict=True):
        it.set_tensor(d["index"], v)
    runs = []
    for _ in range(times):
        it.invoke()
        runs.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
    return runs


def _check(model: bytes, feeds: list[np.ndarray], backend: str, rtol: float) -> None:
    expected = _invokes(model, feeds, None)
    actual = _invokes(model, feeds, backend)
    for k, (a_run, e_run) in enumerate(zip(actual, expected, strict=True)):
        for i, (a, e) in enumerate(zip(a_run, e_run, strict=True)):
            assert_same(a, e, rtol=rtol, what=f"invoke {k} output {i} ({backend})")


@pytest.mark.parametrize(("shape", "seeds"), [((3, 5), (7, 0)), ((2, 2, 3), (-5, 123456789012)), ((9,), (0, 42)),
                                              ((5,), ((1 << 33) | 3, (1 << 31) + 5))])
@pytest.mark.parametrize("op", ["RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"])
def test_random(op: str, shape, seeds, backend: str) -> None:
    """Three invokes of one interpreter: each continues LiteRT's stream (sizes not a multiple of 4
    included; seeds beyond int32 wrap as LiteRT's do)."""
    _check(_random_model(op, shape, *seeds), [np.zeros(1, np.float32)], backend, rtol=1e-6)


@pytest.mark.parametrize("out_dtype", [np.int64, np.int32])
def test_multinomial(out_dtype, backend: str) -> None:
    """Rows with a dominant class, uniform ones and -inf logits (never drawn)."""
    logits = np.array([[0.0, 1.0, 2.0, 3.0, -1.0], [5.0, 5.0, 5.0, 5.0, 5.0], [-np.inf, 0.5, -np.inf, 0.1, 2.0]],
                      np.float32)
    _check(_multinomial_model(3, 5, 7, 11, 3, out_dtype), [logits], backend, rtol=0)
