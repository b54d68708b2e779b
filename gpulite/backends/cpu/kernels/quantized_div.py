"""Quantized DIV (uint8, int8, int16) as TFLite's ``reference_ops::DivElementwise``.

Per element: the divisor's value ``q2 - zp2`` (signs moved to the dividend when it is
negative) becomes a Q0.31 reciprocal by gemmlowp's ``one_over_one_plus_x_for_x_in_0_1``
(three Newton-Raphson steps in fixed point, :func:`reciprocal`), the dividend's value is
shifted up to its headroom and multiplied by it (``SaturatingRoundingDoublingHighMul``), and
the quotient is rescaled by ``s1 / (s2 * s_out)`` (``QuantizeMultiplier``) with a rounding
shift that takes back the headroom and the reciprocal's exponent; then ``zp_out`` and the
fused activation's range. All in int64 numpy, every int32 step as the C++ does it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.quant import QRANGE, quantize_multiplier
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _srdhm(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp's int32 ``SaturatingRoundingDoublingHighMul`` on int64 arrays."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C division truncates
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def _shl_saturating(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT<exponent>`` for exponent > 0 (int32)."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bits of non-negative int64 values below 2**32."""
    n, v = np.zeros(x.shape, np.int64), x.copy()
    for s in (16, 8, 4, 2, 1):
        big = v >= (1 << s)
        n += big * s
        v = np.where(big, v >> s, v)
    return n + (v > 0)


def reciprocal(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's ``GetReciprocal(x, 31, &shift)`` for int32 ``x > 0``: (Q0.31 raw, shift)."""
    lead = 32 - _bit_length(x)  # CountLeadingZeros
    shifted = (x << lead) - (1 << 31)  # x normalised to [1, 2), minus one, as Q0.31
    total = shifted + INT32_MAX  # RoundingHalfSum(a, One): (a + b + sign) / 2, truncating
    half = (total + np.where(total >= 0, 1, -1))
    half = np.where(half >= 0, half // 2, -((-half) // 2))
    r = 1515870810 + _srdhm(half, -1010580540)  # 48/17 - 32/17 * half, Q2.29
    for _ in range(3):
        r = r + _shl_saturating(_srdhm(r, (1 << 29) - _srdhm(half, r)), 2)
    return _shl_saturating(r, 1), 31 - lead


def _leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """TFLite's ``CountLeadingSignBits`` for int32 values."""
    neg = np.where(x == INT32_MIN, 0, 32 - _bit_length(np.where(x < 0, 2 * -x - 1, 0)))
    return np.where(x >= 0, 32 - _bit_length(x) - 1, neg)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _rounding_divide_by_pot(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp's int32 ``RoundingDivideByPOT`` as LiteRT's x86-64 build computes it, exponents
    of 32 and more included (past its assert: the mask ``(1ll << e) - 1`` cast to int32 is -1, and
    the shift count is taken mod 32, as the CPU does). A small dividend over a large divisor gets
    there; LiteRT then returns about the unshifted value, which the clamp turns into the dtype's
    extreme, and gpulite does the same."""
    mask = _wrap32((np.int64(1) << exponent) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (exponent & 31)) + ((x & mask) > threshold)


def divide(v1: np.ndarray, v2: np.ndarray, multiplier: int, shift: int, zp_out: int) -> np.ndarray:
    """``DivElementwise`` of the values ``v1 / v2`` (int64 arrays, ``v2 != 0``), before clamping."""
    flip = v2 < 0
    v1, v2 = np.where(flip, -v1, v1), np.where(flip, -v2, v2)
    inv, recip_shift = reciprocal(v2)
    headroom = _leading_sign_bits(v1)
    # x * (1 << headroom) in int32: 1 << 31 is INT32_MIN, and the product wraps
    unscaled = _srdhm(_wrap32(v1 * np.where(headroom >= 31, INT32_MIN, np.int64(1) << np.minimum(headroom, 30))), inv)
    total_shift = shift - recip_shift - headroom
    if (total_shift > 0).any():  # TFLite asserts the rescale is a right shift
        raise ValueError("quantized DIV: the quotient's rescale would shift left")
    return zp_out + _rounding_divide_by_pot(_srdhm(unscaled, multiplier), -total_shift)


def quantized_div(node: Node, ctx) -> Callable[[], None]:
    """DIV of quantized uint8/int8/int16 tensors (see the module docstring)."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ia, ib, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (ia.dtype == ib.dtype == io.dtype) or ia.dtype not in QRANGE or ib.quant is None or io.quant is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized DIV takes uint8, int8 or int16 inputs and "
                                 f"output of one dtype, got {ia.dtype}, {ib.dtype} -> {io.dtype}")
    if broadcast(a.shape, b.shape, node) != tuple(out.shape):
        raise ShapeError(f"node {node.index} (DIV): inputs {list(a.shape)} and {list(b.shape)} do not broadcast to "
                         f"the output {list(out.shape)}")
    (s1, z1), (s2, z2), (so, zo) = ((float(t.quant.scale[0]), int(t.quant.zero_point[0])) for t in (ia, ib, io))
    # div.cc: input1->params.scale / (input2->params.scale * output->params.scale), in float
    real = float(np.float32(s1) / (np.float32(s2) * np.float32(so)))
    mult, shift = quantize_multiplier(real)
    lo, hi = node.activation.quantized_bounds(so, zo, io.dtype)
    where = f"node {node.index} (DIV): "

    def run() -> None:
        v1, v2 = np.broadcast_arrays(a.astype(np.int64) - z1, b.astype(np.int64) - z2)
        if not v2.all():
            raise ZeroDivisionError(f"{where}a divisor's value is 0 (its code equals the zero point {z2})")
        np.copyto(out, np.clip(divide(v1, v2, mult, shift, zo), lo, hi).reshape(out.shape), casting="unsafe")
    return run
