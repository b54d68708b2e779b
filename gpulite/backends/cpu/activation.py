"""Fused activations applied in place to a kernel's float output."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.fast import clip

_ZERO, _INF = np.float32(0), np.float32(np.inf)


def activation_fn(name: str | None) -> Callable[[np.ndarray], None] | None:
    """In-place activation for a fused ``name`` (None when there is nothing to do).

    TFLite's float kernels turn the fused activation into a clamp range
    (``CalculateActivationRange``), which knows only the RELU family: a fused TANH or
    SIGN_BIT is silently ignored by LiteRT, so it is ignored here too, to give the same
    numbers. ``np.clip`` with float32 bounds is used because on numpy 2.x it is about twice
    as fast as ``np.maximum(x, 0)``.
    """
    if name in (None, "TANH", "SIGN_BIT"):
        return None
    if name == "RELU":
        return lambda x: clip(x, _ZERO, _INF, out=x)
    if name == "RELU6":
        return lambda x: clip(x, _ZERO, np.float32(6), out=x)
    if name == "RELU_N1_TO_1":
        return lambda x: clip(x, np.float32(-1), np.float32(1), out=x)
    raise ValueError(f"unknown fused activation {name!r}")

