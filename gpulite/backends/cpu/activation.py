"""Fused activations applied in place to a kernel's output."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.fast import clip
from gpulite.model.opdefs import FusedActivation

_F32 = np.dtype(np.float32)


def clamp_fn(act: FusedActivation, dtype: np.dtype = _F32) -> Callable[[np.ndarray], None] | None:
    """In-place clamp of a fused ``act`` on an array of ``dtype`` (None when there is nothing to do).

    TFLite's kernels turn the fused activation into a clamp range (``CalculateActivationRange``,
    :attr:`FusedActivation.clamp`), which knows only the RELU family: a fused TANH or SIGN_BIT is
    silently ignored by LiteRT, so it is ignored here too, to give the same numbers. ``np.clip``
    with bounds of the array's dtype is numpy's SIMD clip loop, about twice as fast on numpy 2.x
    as ``np.maximum(x, 0)``.
    """
    bounds = act.bounds(dtype)
    if bounds is None:
        return None
    lo, hi = bounds
    return lambda x: clip(x, lo, hi, out=x)
