"""Small models for the runtime-API tests, built with gpulite's test writer."""

from __future__ import annotations

import numpy as np

from gpulite.testing.tflite_writer import ModelBuilder

F32 = np.float32
SHAPE = (1, 4, 4, 8)


def chain() -> bytes:
    """Four nodes: a = x * 0; b = a / a (NaN everywhere); c = b + 1; y = x + c.

    Node 1 (DIV) is the first to make NaN; every later node propagates it.
    """
    mb = ModelBuilder()
    x = mb.input("x", SHAPE, F32)
    a, b, c, y = (mb.tensor(n, SHAPE, F32) for n in ("a", "b", "c", "y"))
    mb.op("MUL", [x, mb.const("zero", np.zeros(SHAPE[-1], F32))], [a])
    mb.op("DIV", [a, a], [b])
    mb.op("ADD", [b, mb.const("one", np.ones(SHAPE[-1], F32))], [c])
    mb.op("ADD", [x, c], [y])
    mb.output(y)
    return mb.build()


def clean() -> bytes:
    """No NaN: y = sigmoid(x * 2 + 1), three nodes (on the CPU, LOGISTIC is not fused into the ADD,
    as RELU would be; on webgpu it runs in the ADD's epilogue)."""
    mb = ModelBuilder()
    x = mb.input("x", SHAPE, F32)
    a, b, y = (mb.tensor(n, SHAPE, F32) for n in ("a", "b", "y"))
    mb.op("MUL", [x, mb.const("two", np.full(SHAPE[-1], 2, F32))], [a])
    mb.op("ADD", [a, mb.const("one", np.ones(SHAPE[-1], F32))], [b])
    mb.op("LOGISTIC", [b], [y])
    mb.output(y)
    return mb.build()


def clean_ref(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-(x * 2 + 1)))).astype(F32)


def x_of(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, SHAPE).astype(F32)


def nodes_run(it) -> list[tuple[str, int]]:
    """(op, node index) of every step the compiled plan runs, in order: the nodes of the
    graph the backend prepared (the CPU backend's fusions may have dropped some)."""
    return [(n.op, n.index) for n in it.graph.nodes]


def run(it, x: np.ndarray) -> np.ndarray:
    if it._exe is None:
        it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])
