"""Float activation ops against LiteRT: RELU, RELU6, RELU_N1_TO_1, TANH, LOGISTIC,
HARD_SWISH, LEAKY_RELU, PRELU and SOFTMAX.

Inputs span every threshold of the op (and, for LOGISTIC/SOFTMAX, magnitudes where a
naive formula overflows), so a kernel that gets any region wrong fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op

SHAPE = (1, 9, 9, 5)


def unary_model(op: str, shape, **options) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    y = mb.tensor("y", shape, np.float32)
    mb.op(op, [x], [y], **options)
    mb.output(y)
    return mb.build()


def spread(shape, lo: float, hi: float, seed: int = 0) -> np.ndarray:
    """Uniform values in [lo, hi] plus exact 0 and the op-relevant integers, shuffled."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, shape).astype(np.float32)
    flat = x.reshape(-1)
    specials = np.array([0.0, -0.0, -1.0, 1.0, -3.0, 3.0, 6.0, lo, hi], np.float32)
    flat[: specials.size] = specials
    rng.shuffle(flat)
    return x


@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1", "TANH", "LOGISTIC", "HARD_SWISH"])
def test_unary_activation(op: str, backend: str) -> None:
    check_op(unary_model(op, SHAPE), [spread(SHAPE, -10, 10)], backend)


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_saturating_extremes(op: str, backend: str) -> None:
    # exp(-x) overflows float32 below x = -88.7; the kernel must still give 0 and 1, not NaN.
    x = np.array([[-np.inf, -1e10, -1e4, -200, -100, -89, -88, -20, 0, 20, 88, 89, 100, 1e4, 1e10, np.inf]],
                 np.float32)
    check_op(unary_model(op, x.shape), [x], backend)


def test_logistic_huge_inputs(backend: str) -> None:
    # Listed in expected_failures: LiteRT's default (XNNPACK) sigmoid returns NaN here.
    x = np.array([[-1e30, 1e30, -3e38, 3e38]], np.float32)
    check_op(unary_model("LOGISTIC", x.shape), [x], backend)


@pytest.mark.parametrize("alpha", [0.2, 0.0, 1.0, 1.7, -0.5])
def test_leaky_relu(alpha: float, backend: str) -> None:
    check_op(unary_model("LEAKY_RELU", SHAPE, alpha=alpha), [spread(SHAPE, -5, 5)], backend)


def prelu_model(x_shape, alpha: np.ndarray | None, alpha_shape=None) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", x_shape, np.float32)
    a = mb.const("alpha", alpha) if alpha is not None else mb.input("alpha", alpha_shape, np.float32)
    y = mb.tensor("y", x_shape, np.float32)
    mb.op("PRELU", [x, a], [y])
    mb.output(y)
    return mb.build()


# Alpha values below 1, above 1, and on both sides (three code paths in the kernel).
ALPHAS = {"below_one": (0.0, 0.9), "above_one": (1.0, 3.0), "mixed": (-0.5, 2.0)}
ALPHA_SHAPES = {"hwc": (1, 1, 5), "c": (5,), "single": (1, 1, 1), "full": (9, 9, 5)}


@pytest.mark.parametrize("alpha_shape", list(ALPHA_SHAPES))
@pytest.mark.parametrize("alphas", list(ALPHAS))
def test_prelu_const_alpha(alphas: str, alpha_shape: str, backend: str) -> None:
    rng = np.random.default_rng(4)
    lo, hi = ALPHAS[alphas]
    alpha = rng.uniform(lo, hi, ALPHA_SHAPES[alpha_shape]).astype(np.float32)
    if alphas == "mixed" and alpha.size > 1:
        alpha.reshape(-1)[:2] = [-0.5, 2.0]  # make sure both sides of 1 are present
    check_op(prelu_model(SHAPE, alpha), [spread(SHAPE, -5, 5)], backend)


def test_prelu_runtime_alpha(backend: str) -> None:
    alpha = np.random.default_rng(8).uniform(-1, 2, (1, 1, 5)).astype(np.float32)
    check_op(prelu_model(SHAPE, None, (1, 1, 5)), [spread(SHAPE, -5, 5), alpha], backend)


@pytest.mark.parametrize("alphas", list(ALPHAS))
def test_prelu_large_tensor(alphas: str, backend: str) -> None:
    # 96 x 96 x 32 as in palm_detection: alpha is tiled over many rows (broadcast_tile.py).
    shape = (1, 96, 96, 32)
    alpha = np.random.default_rng(10).uniform(*ALPHAS[alphas], (1, 1, 32)).astype(np.float32)
    check_op(prelu_model(shape, alpha), [spread(shape, -5, 5)], backend)


SOFTMAX_SHAPES = [(1, 10), (3, 1), (2, 3, 7), (1, 4, 4, 16), (2, 1001)]


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.5])
@pytest.mark.parametrize("shape", SOFTMAX_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax(shape, beta: float, backend: str) -> None:
    x = np.random.default_rng(9).normal(0, 3, shape).astype(np.float32)
    check_op(unary_model("SOFTMAX", shape, beta=beta), [x], backend)


# Rows around the GPU kernel's edges (row_tree.wgsl: 256 threads a workgroup, about 16
# elements a thread): many short rows, rows of 16/17, one workgroup's worth (4096), longer
# and not a power of two, one very long row.
ROW_EDGE_SHAPES = [(3000, 5), (40, 16), (33, 17), (2, 4096), (3, 5000), (1, 70001)]


@pytest.mark.parametrize("op", ["SOFTMAX", "LOG_SOFTMAX", "L2_NORMALIZATION"])
@pytest.mark.parametrize("shape", ROW_EDGE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_row_ops_at_kernel_edges(op: str, shape, backend: str) -> None:
    x = np.random.default_rng(shape[1]).normal(0, 3, shape).astype(np.float32)
    options = {"beta": 0.7} if op == "SOFTMAX" else {}
    check_op(unary_model(op, shape, **options), [x], backend)


@pytest.mark.parametrize("op", ["SOFTMAX", "LOG_SOFTMAX"])
def test_softmax_infinities_and_nan(op: str, backend: str) -> None:
    """-inf logits (some, all), +inf, a NaN: the values (and NaNs) LiteRT gives."""
    x = np.random.default_rng(4).normal(0, 3, (5, 300)).astype(np.float32)
    x[0, ::3] = -np.inf
    x[1] = -np.inf
    x[2, 7] = np.inf
    x[3, 100] = np.nan
    check_op(unary_model(op, x.shape), [x], backend)


def test_softmax_large_logits(backend: str) -> None:
    # exp(1000) overflows: only a kernel that subtracts the row max first gets finite output.
    x = np.array([[1000.0, 999.0, 990.0, -1000.0], [-500.0, -501.0, -499.0, -2000.0]], np.float32)
    check_op(unary_model("SOFTMAX", x.shape, beta=1.0), [x], backend)


@pytest.mark.parametrize("op", ["SOFTMAX", "HARD_SWISH", "LOGISTIC"])
def test_resized_input(op: str, backend: str) -> None:
    x = spread((2, 3, 11), -6, 6, seed=2)
    options = {"beta": 1.0} if op == "SOFTMAX" else {}
    check_op(unary_model(op, (1, 3, 4), **options), [x], backend)


def test_prelu_resized_input(backend: str) -> None:
    alpha = np.random.default_rng(15).uniform(0, 1, (1, 1, 5)).astype(np.float32)
    check_op(prelu_model((1, 2, 2, 5), alpha), [spread((2, 6, 3, 5), -4, 4)], backend)
