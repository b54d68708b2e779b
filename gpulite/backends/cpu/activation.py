"""Fused activations applied in place to a kernel's float output."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def activation_fn(name: str | None) -> Callable[[np.ndarray], None] | None:
    """In-place activation for a fused ``name`` (None when there is nothing to do)."""
    if name is None:
        return None
    if name == "RELU":
        return lambda x: np.maximum(x, 0, out=x)
    if name == "RELU6":
        return lambda x: np.clip(x, 0, 6, out=x)
    if name == "RELU_N1_TO_1":
        return lambda x: np.clip(x, -1, 1, out=x)
    if name == "TANH":
        return lambda x: np.tanh(x, out=x)
    if name == "SIGN_BIT":
        return lambda x: np.copyto(x, np.signbit(x).astype(x.dtype))
    raise ValueError(f"unknown fused activation {name!r}")


def activation_range(name: str | None, scale: float, zero_point: int, qmin: int, qmax: int) -> tuple[int, int]:
    """Clamp bounds of a fused activation in the quantized domain (TFLite's CalculateActivationRangeQuantized)."""
    def q(v: float) -> int:
        return int(zero_point + round(v / scale))
    if name is None:
        return qmin, qmax
    if name == "RELU":
        return max(qmin, q(0.0)), qmax
    if name == "RELU6":
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if name == "RELU_N1_TO_1":
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    raise ValueError(f"fused activation {name} has no quantized form")
