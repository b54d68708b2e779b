"""Shapes of RFFT2D and the complex-to-real ops (COMPLEX_ABS, REAL, IMAG)."""

from __future__ import annotations

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.layout import where
from gpulite.graph.shapes import shape_rule
from gpulite.model.opdefs import Op


def rfft2d_lengths(node, in_shape, fft_length: np.ndarray | None) -> tuple[int, int]:
    """``(fft_height, fft_width)`` from the constant ``fft_length``, as rfft2d.cc's Prepare checks them."""
    if fft_length is None:
        raise ShapeError(f"{where(node)}fft_length is computed at run time; its output shape is not known")
    lengths = [int(v) for v in np.asarray(fft_length).reshape(-1)]
    if np.ndim(fft_length) != 1 or len(lengths) != 2:
        raise ShapeError(f"{where(node)}fft_length must hold 2 values, got shape {list(np.shape(fft_length))}")
    if any(v < 1 or v & (v - 1) for v in lengths):
        raise ShapeError(f"{where(node)}fft_length {lengths}: LiteRT's rfft2d takes powers of two only")
    if len(in_shape) < 2:
        raise ShapeError(f"{where(node)}input must have rank >= 2, got {list(in_shape)}")
    return lengths[0], lengths[1]


@shape_rule(Op.RFFT2D)
def _rfft2d(node, ins, consts):
    h, w = rfft2d_lengths(node, ins[0], consts[1])
    return [(*ins[0][:-2], h, w // 2 + 1)]


@shape_rule(Op.COMPLEX_ABS, Op.REAL, Op.IMAG)
def _complex_to_real(node, ins, consts):
    return [tuple(ins[0])]
