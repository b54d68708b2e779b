"""The integer formulas of 8-bit ADD, SUB and MUL, as LiteRT's default interpreter computes them.

With default options LiteRT hands quantized ADD/SUB/MUL to its XNNPACK delegate whenever the
scale ratios are in the delegate's range, and its arithmetic is not TFLite's:

- XNNPACK ``qs8/qu8-vadd``: 20-bit multipliers ``lrintf(ldexpf(s_in / s_out, shift))`` and one
  rounding shift; SUB is ADD with the second multiplier negated.
- XNNPACK ``qs8/qu8-vmul``: ``(a - za) * (b - zb)`` as float times ``s1 * s2 / s_out`` (float32),
  rounded half to even.
- Fused activations become bounds ``lrintf(v / s_out + zp)`` (``xnn_qs8_quantize``).

Out of range, TFLite's builtin kernels run: MUL and SUB as ``MultiplyByQuantizedMultiplier``
(double rounding); ADD through its NEON code (compiled on x86 via NEON_2_SSE), which folds
the input shift into the left shift (int8) or truncates it (uint8) and narrows through int16,
for all but the last ``size % block`` elements of each contiguous run, which take the scalar
path (:func:`builtin_scalar_positions` says which; a broadcast in both inputs is all scalar).
MUL's NEON body saturates to int16 before adding the zero point, which can then wrap.

Each function maps int64 arrays of input values to int64 outputs before the final clamp
to the output dtype's range (activation bounds included).

Not modelled (they differ only for scales no converter emits, real multipliers >= 256):
uint8 ADD with both inputs broadcast and uint8 MUL against a single broadcast value.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.quant import (
    QRANGE,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
)
from gpulite.model.opdefs import FusedActivation, Op

_F32 = np.float32
# Input/output scale ratios XNNPACK's delegate accepts (xnnpack_delegate.cc CheckTensors...Scale).
XNN_ADD_RATIO = (2.0 ** -10, 2.0 ** 8)
XNN_MUL_RATIO = (2.0 ** -16, 2.0 ** 8)
# Elements per NEON iteration of TFLite's optimized ADD/MUL: (elementwise runs, runs against
# one broadcast value); the remainder of each run takes the scalar loop.
_I8, _U8 = np.dtype(np.int8), np.dtype(np.uint8)
NEON_BLOCKS = {(Op.ADD, _I8): (16, 8), (Op.ADD, _U8): (8, 8), (Op.MUL, _I8): (16, 16), (Op.MUL, _U8): (8, 8)}


def xnn_accepts(op: str, s1: float, s2: float, so: float) -> bool:
    """Whether LiteRT's XNNPACK delegate takes this quantized ADD/SUB/MUL."""
    if op == Op.MUL:
        lo, hi = XNN_MUL_RATIO
        r = float(_F32(_F32(s1) * _F32(s2)) / _F32(so))
        return lo <= r < hi
    lo, hi = XNN_ADD_RATIO
    return all(lo <= float(_F32(s) / _F32(so)) < hi for s in (s1, s2))


def xnn_activation_range(act: FusedActivation, scale: float, zp: int, dtype: np.dtype) -> tuple[int, int]:
    """Bounds of a fused activation (NONE or a clamp) as XNNPACK quantizes them: ``lrintf(v / scale + zp)``."""
    qmin, qmax = QRANGE[np.dtype(dtype)]
    lo_f, hi_f = act.clamp or (-np.inf, np.inf)

    def q(v: float) -> int:
        x = _F32(v) / _F32(scale) + _F32(zp) if np.isfinite(v) else _F32(v)
        return int(np.rint(np.clip(x, _F32(qmin), _F32(qmax))))  # rint: half to even, as lrintf
    return q(lo_f), q(hi_f)


def xnn_add_params(s1: float, z1: int, s2: float, z2: int, so: float, sub: bool) -> tuple[int, int, int, int]:
    """XNNPACK's ADD/SUB constants ``(am, bm, shift, bias)``: the result is
    ``((bias + x1 * am + x2 * bm) >> shift) + zo``."""
    a_scale, b_scale = _F32(s1) / _F32(so), _F32(s2) / _F32(so)
    if sub:
        b_scale = -b_scale
    top = max(abs(a_scale), abs(b_scale))
    exponent = int(np.array(top, _F32).view(np.uint32) >> 23) - 127
    shift = 20 - exponent
    am = int(np.rint(np.ldexp(a_scale, shift)))
    bm = int(np.rint(np.ldexp(b_scale, shift)))
    return am, bm, shift, (1 << (shift - 1)) - am * z1 - bm * z2


def xnn_add(x1, x2, s1, z1, s2, z2, so, zo, sub: bool) -> np.ndarray:
    am, bm, shift, bias = xnn_add_params(s1, z1, s2, z2, so, sub)
    return ((bias + x1 * am + x2 * bm) >> shift) + zo


def xnn_mul_scale(s1: float, s2: float, so: float) -> np.float32:
    """XNNPACK's MUL factor ``s1 * s2 / so`` in float32."""
    return _F32(_F32(s1) * _F32(s2)) / _F32(so)


def xnn_mul(x1, x2, s1, z1, s2, z2, so, zo, sub: bool = False) -> np.ndarray:
    acc = ((x1 - z1) * (x2 - z2)).astype(_F32) * xnn_mul_scale(s1, s2, so)
    return np.rint(acc).astype(np.int64) + zo


def add_multipliers(s1: float, s2: float, so: float) -> tuple[tuple[int, int], ...]:
    """TFLite's 8-bit ADD rescales ``((m1, shift1), (m2, shift2), (m_out, shift_out))`` (inputs
    shifted left by 20 first)."""
    twice_max = 2.0 * max(s1, s2)
    return (quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
            quantize_multiplier(twice_max / ((1 << 20) * so)))


def tflite_add_scalar(x1, x2, s1, z1, s2, z2, so, zo, sub: bool) -> np.ndarray:
    """reference/optimized scalar ``AddElementwise``; sub.cc negates the second multiplier."""
    (m1, sh1), (m2, sh2), (mo, sho) = add_multipliers(s1, s2, so)
    a = multiply_by_quantized_multiplier((x1 - z1) << 20, m1, sh1)
    b = multiply_by_quantized_multiplier((x2 - z2) << 20, -m2 if sub else m2, sh2)
    return multiply_by_quantized_multiplier(a + b, mo, sho) + zo


def srdhm(a: np.ndarray, m: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int64 arrays (m is never INT32_MIN here)."""
    ab = a * m
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    return np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))


def _wrap(x: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return ((x + half) & ((1 << bits) - 1)) - half


def tflite_add_neon(x1, x2, s1, z1, s2, z2, so, zo, dtype: np.dtype) -> np.ndarray:
    """The NEON body of TFLite's optimized 8-bit ``AddElementwise`` (vqrdmulh, vmovn to int16)."""
    (m1, sh1), (m2, sh2), (mo, sho) = add_multipliers(s1, s2, so)
    if np.dtype(dtype) == np.int8:  # shift folded in before the multiply: a single rounding
        def scale(x, m, sh):
            n = 20 + sh
            return srdhm(x << n if n >= 0 else x >> -n, m)
    else:  # uint8 multiplies first, then shifts right truncating
        def scale(x, m, sh):
            return srdhm(x << 20, m) >> -sh
    total = _wrap(scale(x1 - z1, m1, sh1) + scale(x2 - z2, m2, sh2), 32)
    out = rounding_divide_by_pot(srdhm(total, mo), -sho)
    return _wrap(_wrap(out, 16) + zo, 16)


def mul_multiplier(s1: float, s2: float, so: float) -> tuple[int, int]:
    """TFLite's 8-bit MUL rescale of ``(x1 - z1) * (x2 - z2)``: ``s1 * s2 / so`` in double."""
    return quantize_multiplier(float(np.float64(s1) * np.float64(s2) / np.float64(so)))


def tflite_mul(x1, x2, s1, z1, s2, z2, so, zo, sub: bool = False) -> np.ndarray:
    """TFLite's scalar 8-bit ``MulElementwise``."""
    m, sh = mul_multiplier(s1, s2, so)
    return multiply_by_quantized_multiplier((x1 - z1) * (x2 - z2), m, sh) + zo


def tflite_mul_neon(x1, x2, s1, z1, s2, z2, so, zo, sub: bool = False) -> np.ndarray:
    """The NEON body of TFLite's 8-bit MUL: the scalar result saturated to int16 (vqmovn), then
    the zero point added in int16, which wraps when that saturated."""
    raw = tflite_mul(x1, x2, s1, z1, s2, z2, so, 0)
    return _wrap(np.clip(raw, -(1 << 15), (1 << 15) - 1) + zo, 16)


def builtin_scalar_positions(op: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                             out_shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Which output elements TFLite's builtin 8-bit ADD/MUL computes in its scalar loop (bool, flat).

    Equal shapes run one elementwise loop. When only one input broadcasts, TFLite splits the
    output into runs (``BinaryBroadcastFiveFold``): where that input's trailing dimensions
    match the output, elementwise runs over them; where they are 1, runs against a single
    value (``AddScalarBroadcast``/``MulSimpleBroadcast``). Each run is NEON except its last
    ``run % block`` elements.
    When both inputs broadcast, the generic path is scalar throughout.
    """
    size = int(np.prod(out_shape))
    runs = builtin_runs(op, a_shape, b_shape, out_shape, dtype)
    if runs is None:
        return np.ones(size, np.bool_)
    run, block = runs
    offset = np.arange(size) % max(run, 1)
    return offset >= run - run % block


def builtin_runs(op: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], out_shape: tuple[int, ...],
                 dtype: np.dtype) -> tuple[int, int] | None:
    """``(run, block)`` of :func:`builtin_scalar_positions`: output element ``i`` is scalar when
    ``i % run >= run - run % block``; None when every element is (both inputs broadcast)."""
    nd = len(out_shape)
    a = (1,) * (nd - len(a_shape)) + tuple(a_shape)
    b = (1,) * (nd - len(b_shape)) + tuple(b_shape)
    out = tuple(out_shape)
    if a != out and b != out:
        return None
    elementwise_block, single_block = NEON_BLOCKS[(op, np.dtype(dtype))]
    if a == out and b == out:
        return int(np.prod(out)), elementwise_block
    small = b if a == out else a
    elementwise = small[-1] == out[-1] and out[-1] != 1
    k = 0
    while k < nd and ((small[nd - 1 - k] == out[nd - 1 - k]) if elementwise else small[nd - 1 - k] == 1):
        k += 1
    return int(np.prod(out[nd - k:])), elementwise_block if elementwise else single_block


def tflite_squared_difference(x1, x2, s1, z1, s2, z2, so, zo, sub: bool = False) -> np.ndarray:
    """TFLite's 8-bit SQUARED_DIFFERENCE: both inputs shifted left by 7 and rescaled by
    ``s_i / (2 max(s1, s2))``, the difference squared, rescaled by
    ``(2 max)**2 / (2**14 * s_out)`` (``2**14 * s_out`` a float32 product), plus the zero point."""
    twice_max = 2.0 * float(max(_F32(s1), _F32(s2)))
    m1, sh1 = quantize_multiplier(float(_F32(s1)) / twice_max)
    m2, sh2 = quantize_multiplier(float(_F32(s2)) / twice_max)
    mo, sho = quantize_multiplier(twice_max * twice_max / float(_F32(1 << 14) * _F32(so)))
    a = multiply_by_quantized_multiplier((x1 - z1) << 7, m1, sh1)
    b = multiply_by_quantized_multiplier((x2 - z2) << 7, m2, sh2)
    return multiply_by_quantized_multiplier((a - b) * (a - b), mo, sho) + zo
