"""int8/uint8 L2_NORMALIZATION, bit-exact with LiteRT's integer kernels.

Per row: ``acc = sum((x - zero_point)**2)`` in int32, its inverse square root as a fixed-point
multiplier and shift (``GetInvSqrtQuantizedMultiplierExp``: five Newton-Raphson steps in
gemmlowp's Q3 arithmetic), then each ``x - zero_point`` rescaled to the output's fixed
1/128 scale (int8: ``MultiplyByQuantizedMultiplier`` with the shift + 7; uint8: ``128 * diff``
rescaled, plus 128), clamped to the type's range.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.quant import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, rounding_divide_by_pot
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Node

_I64 = np.int64


def _high_mul(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values held in int64."""
    a, b = np.asarray(a, _I64), np.asarray(b, _I64)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C's division truncates
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def _shift_left_saturating(x: np.ndarray, exponent: int) -> np.ndarray:
    """``SaturatingRoundingMultiplyByPOT<exponent>`` for exponent > 0."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def inv_sqrt_multiplier(acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``GetInvSqrtQuantizedMultiplierExp(acc, kReverseShift = -1)`` per value: (multiplier, left shift)."""
    x = np.asarray(acc, _I64).copy()
    small = x <= 1
    x[small] = 2  # computed, then replaced by the kernel's special case below
    shift = np.full(x.shape, 11, _I64)
    while (big := x >= (1 << 29)).any():
        x = np.where(big, x // 4, x)
        shift += big
    bit_length = np.frexp(x.astype(np.float64))[1].astype(_I64)
    pairs = ((32 - bit_length) - 1) // 2 - 1  # (CountLeadingZeros - 1) / 2 - 1
    shift -= pairs
    x <<= 2 * pairs
    half_input = rounding_divide_by_pot(x >> 1, 1)  # Q3 input / 2
    half_three = (1 << 28) + (1 << 27)  # 1.5 in Q3
    y = np.full(x.shape, 1 << 28, _I64)  # 1.0 in Q3
    for _ in range(5):
        y3 = _shift_left_saturating(_high_mul(_high_mul(y, y), y), 6)  # Q9 -> Q3
        y = _shift_left_saturating(_high_mul(half_three, y) - _high_mul(half_input, y3), 3)  # Q6 -> Q3
    y = _high_mul(y, 1518500250)  # times sqrt(2) / 2 (Q0)
    negative = shift < 0
    y = np.where(negative, y << np.where(negative, -shift, 0), y)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, y), np.where(small, 0, -shift)


def quantized_l2_normalization(node: Node, ctx) -> Callable[[], None]:
    """Factory for int8 (output zero point 0) and uint8 (128) L2_NORMALIZATION, output scale 1/128."""
    xi, oi = ctx.in_info(0), ctx.out_info(0)
    want_zp = 0 if xi.dtype == np.int8 else 128
    if oi.dtype != xi.dtype or oi.quant is None or oi.quant.scale.size != 1 or \
            float(oi.quant.scale[0]) != 1 / 128 or int(oi.quant.zero_point[0]) != want_zp:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"a quantized output must be {xi.dtype} with scale 1/128 "
                                 f"and zero point {want_zp} (LiteRT's l2norm.cc), got {oi.dtype} {oi.quant}")
    if node.activation:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"fused activation {node.activation} (LiteRT takes none)")
    x, out = ctx.input(0), ctx.output(0)
    zp = int(xi.quant.zero_point[0])
    lo, hi = (-128, 127) if xi.dtype == np.int8 else (0, 255)

    def run() -> None:
        diff = x.astype(_I64) - zp
        mult, shift = inv_sqrt_multiplier(np.einsum("...c,...c->...", diff, diff)[..., None])
        if xi.dtype == np.int8:
            y = multiply_by_quantized_multiplier(diff, mult, shift + 7)
        else:
            y = multiply_by_quantized_multiplier(128 * diff, mult, shift) + 128
        np.copyto(out, np.clip(y, lo, hi), casting="unsafe")
    return run
