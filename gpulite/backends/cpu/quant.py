"""Integer helpers shared by quantized CPU kernels, bit-exact with TFLite's reference kernels.

TFLite turns a real rescale factor into a Q31 ``multiplier`` and a power-of-two ``shift``
(``QuantizeMultiplier``), then rescales an int32 accumulator with
``MultiplyByQuantizedMultiplier``: a saturating rounding doubling high multiply followed by
a rounding right shift (gemmlowp's two roundings; the default build, not
``TFLITE_SINGLE_ROUNDING``). Not every LiteRT kernel does that: its reference
FULLY_CONNECTED rescales with one rounding, ``(x * multiplier + 2**(30 - shift)) >> (31 - shift)``,
which :func:`multiply_by_quantized_multiplier_single` gives — measured against LiteRT 2.3's
reference kernels: single rounding matches FC bit for bit and misses ~0.2% of conv outputs,
double rounding the reverse. Everything here is vectorised over int64 arrays so per-channel
multipliers broadcast, and :class:`Requantizer` does the whole int32 → int8/uint8 step into
preallocated scratch so kernels allocate nothing per invoke. LiteRT's default interpreter
rescales its 8-bit convolutions and FULLY_CONNECTED otherwise: :class:`Fp32Requantizer` is
XNNPACK's float32 rescale, for those its XNNPACK delegate runs, :class:`NeonRequantizer` the
NEON / ruy rounding of its optimized builtin kernels, for those the delegate declines.
"""

from __future__ import annotations

import math

import numpy as np

from gpulite.errors import UnsupportedOpError

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
QRANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255), np.dtype(np.int16): (-32768, 32767)}


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's ``QuantizeMultiplier``: ``real ≈ multiplier * 2**(shift - 31)``.

    Parameters
    ----------
    real : float
        The rescale factor (a double in TFLite).

    Returns
    -------
    (int, int)
        ``multiplier`` in [2**30, 2**31) (or 0) and ``shift`` (positive = left shift).
    """
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    # TfLiteRound is std::round: halves away from zero (Python's round() would go to even).
    q_fixed = math.floor(abs(q) * (1 << 31) + 0.5) * (1 if q >= 0 else -1)
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def quantize_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`quantize_multiplier` for each entry; returns int64 ``(multipliers, shifts)``."""
    pairs = [quantize_multiplier(float(r)) for r in np.asarray(reals, np.float64).reshape(-1)]
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def _wrap32(x: np.ndarray) -> np.ndarray:
    # int32 arithmetic in C wraps; emulate it on int64 so overflow cases match too.
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite's ``MultiplyByQuantizedMultiplier(x, multiplier, shift)``, elementwise.

    Parameters
    ----------
    x : array_like of int
        int32 values (any integer dtype; computed in int64).
    multiplier, shift : array_like of int
        From :func:`quantize_multiplier`; broadcast against ``x``.

    Returns
    -------
    numpy.ndarray
        int64 array of the rescaled values (each within int32).
    """
    x = np.asarray(x, np.int64)
    m = np.asarray(multiplier, np.int64)
    s = np.asarray(shift, np.int64)
    left, right = np.maximum(s, 0), np.maximum(-s, 0)
    a = _wrap32(x << left)
    ab = a * m
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    # C's int64 division truncates toward zero; >> floors, so divide magnitudes.
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))
    high = np.where((a == INT32_MIN) & (m == INT32_MIN), INT32_MAX, high)
    return rounding_divide_by_pot(high, right)


def multiply_by_quantized_multiplier_single(x, multiplier, shift) -> np.ndarray:
    """Single-rounding ``MultiplyByQuantizedMultiplier`` (ruy / ``TFLITE_SINGLE_ROUNDING``), elementwise.

    ``(x * multiplier + 2**(30 - shift)) >> (31 - shift)``: one rounding, halves up.
    """
    x = np.asarray(x, np.int64)
    total = 31 - np.asarray(shift, np.int64)
    return (x * np.asarray(multiplier, np.int64) + (np.int64(1) << (total - 1))) >> total


def multiply_by_quantized_multiplier_int64(x, multiplier, shift) -> np.ndarray:
    """TFLite's ``MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift)``: the
    multiplier rounded to Q15, then one rounding right shift by ``15 - shift`` (arithmetic:
    halves round up); the result cast to int32 (wrapping, as the C cast does)."""
    m = np.asarray(multiplier, np.int64)
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - np.asarray(shift, np.int64)
    return _wrap32((np.asarray(x, np.int64) * reduced + (np.int64(1) << (total - 1))) >> total)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded half away from zero."""
    x = np.asarray(x, np.int64)
    e = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + ((x & mask) > threshold)


class Requantizer:
    """Rescale an int64 accumulator to int8/uint8 in place-friendly steps, allocation-free.

    Equivalent to ``clip(multiply_by_quantized_multiplier(acc, m, s) + zero_point, lo, hi)``
    with the multiplier and shift broadcast along the last axis (per output channel), but
    every intermediate lives in scratch arrays made once here.

    Parameters
    ----------
    shape : tuple of int
        Shape of the accumulator (channels last).
    multiplier, shift : numpy.ndarray
        int64, length 1 or the channel count.
    zero_point, lo, hi : int
        Output zero point and the (activation-clamped) quantized range.
    single_rounding : bool
        Use :func:`multiply_by_quantized_multiplier_single` instead (LiteRT's reference FC).
    int64 : bool
        TFLite's ``MultiplyByQuantizedMultiplier(int64_t x, ...)`` overload instead (16x8 ops, whose
        accumulators are int64): the multiplier rounded to Q15 first, then one rounding shift.
    """

    def __init__(self, shape: tuple[int, ...], multiplier: np.ndarray, shift: np.ndarray,
                 zero_point: int, lo: int, hi: int, single_rounding: bool = False, int64: bool = False) -> None:
        m = np.asarray(multiplier, np.int64).reshape(-1)
        s = np.asarray(shift, np.int64).reshape(-1)
        self.single = single_rounding or int64
        if int64:
            m = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
            s = s + 16  # x * reduced >> (15 - shift): the single-rounding form, 16 bits fewer
        self.total_shift = 31 - s
        self.round = np.int64(1) << (self.total_shift - 1)
        self.left = np.maximum(s, 0)
        self.right = np.maximum(-s, 0)
        self.mult = m
        self.mask = (np.int64(1) << self.right) - 1
        self.half_mask = self.mask >> 1
        self.zero_point, self.lo, self.hi = zero_point, lo, hi
        self.t = np.empty(shape, np.int64)
        self.u = np.empty(shape, np.int64)
        self.b = np.empty(shape, np.bool_)
        self.neg = np.empty(shape, np.bool_)
        self._shift_left = bool((self.left != 0).any())
        if (m == INT32_MIN).any():
            raise ValueError(f"multiplier INT32_MIN needs the saturating path; got multipliers {m.tolist()}")

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        """Rescale ``acc`` (int64, clobbered) and write the clamped result into ``out``."""
        t, u, neg, b = self.t, self.u, self.neg, self.b
        if self.single:
            np.multiply(acc, self.mult, out=acc)
            np.add(acc, self.round, out=acc)
            np.right_shift(acc, self.total_shift, out=t)
            np.add(t, self.zero_point, out=t)
            np.clip(t, self.lo, self.hi, out=t)
            np.copyto(out, t, casting="unsafe")
            return
        if self._shift_left:
            np.left_shift(acc, self.left, out=acc)
            np.add(acc, 1 << 31, out=acc)  # wrap to int32 as C's int32 multiply would
            np.bitwise_and(acc, 0xFFFFFFFF, out=acc)
            np.subtract(acc, 1 << 31, out=acc)
        np.multiply(acc, self.mult, out=acc)
        # Saturating rounding doubling high mul: nudge is 2**30 for ab >= 0 and 1 - 2**30 below.
        np.less(acc, 0, out=neg)
        np.multiply(neg, (1 << 31) - 1, out=u)
        np.add(acc, 1 << 30, out=acc)
        np.subtract(acc, u, out=acc)
        # C divides by 2**31 truncating toward zero; >> floors, so add 1 for inexact negatives.
        np.bitwise_and(acc, (1 << 31) - 1, out=u)
        np.right_shift(acc, 31, out=t)
        np.not_equal(u, 0, out=b)
        np.logical_and(b, neg, out=b)
        np.add(t, b, out=t)
        # RoundingDivideByPOT: remainder > half_mask + (x < 0) rounds up.
        np.bitwise_and(t, self.mask, out=u)
        np.less(t, 0, out=neg)
        np.right_shift(t, self.right, out=t)
        np.subtract(u, neg, out=u)
        np.greater(u, self.half_mask, out=b)
        np.add(t, b, out=t)
        np.add(t, self.zero_point, out=t)
        np.clip(t, self.lo, self.hi, out=t)
        np.copyto(out, t, casting="unsafe")


class NeonRequantizer:
    """TFLite's optimized per-channel ``Quantize`` (``optimized_ops.h``), which its builtin int8
    TRANSPOSE_CONV (``TransposeConvV2``) rescales with, allocation-free: channels in whole blocks
    of 8 (the first ``channels // 8 * 8``) take the NEON loop, which x86 builds run too (through
    NEON_2_SSE, as LiteRT's wheels are built): the accumulator shifted left by ``max(shift, 0)``
    (wrapping), ``vqrdmulh`` by the multiplier (``(a * m + 2**30) >> 31``: halves round up, where
    gemmlowp's ``SaturatingRoundingDoublingHighMul`` rounds them away from zero) and ``vrshl``
    right by ``max(-shift, 0)`` (halves up again, where ``RoundingDivideByPOT`` rounds them away
    from zero); the other channels take ``MultiplyByQuantizedMultiplier`` (:class:`Requantizer`).
    The two differ only on a negative tie, which LiteRT's outputs show (corpus/unet_int8). Its
    int8 DEPTHWISE_CONV_2D's general path (``DepthwiseConvGeneral``'s output stage) rounds the same
    way in the same blocks of 8 output channels.

    ``all_channels`` takes the NEON rounding on every channel: ruy's, behind LiteRT's optimized
    int8 / uint8 CONV_2D and FULLY_CONNECTED (``cpu_backend_gemm``), whose kernels round halves up
    in both steps on any channel count.

    ``flat16``: TFLite's optimized per-tensor uint8 ``Quantize`` instead (uint8 TRANSPOSE_CONV's
    builtin kernel), whose NEON loop takes the flat output in blocks of 16 elements: the first
    ``size // 16 * 16`` round so, the rest as :class:`Requantizer` (per-tensor multiplier).

    Other parameters as :class:`Requantizer`'s (``multiplier``, ``shift`` length 1 or the channel count).
    """

    def __init__(self, shape: tuple[int, ...], multiplier: np.ndarray, shift: np.ndarray,
                 zero_point: int, lo: int, hi: int, all_channels: bool = False, flat16: bool = False) -> None:
        self.flat = flat16
        if flat16:
            shape = (int(np.prod(shape)),)
        channels = shape[-1]
        s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (channels,))
        self.n = channels if all_channels else channels // 16 * 16 if flat16 else channels // 8 * 8
        self.rest = Requantizer(shape, multiplier, shift, zero_point, lo, hi) if self.n < channels else None
        self.mult = np.broadcast_to(np.asarray(multiplier, np.int64).reshape(-1), (channels,))[:self.n]
        self.left, right = np.maximum(s, 0)[:self.n], np.maximum(-s, 0)[:self.n]
        # vrshl by e: (h + 2**(e - 1)) >> e without overflow, as (h >> e) + ((h >> (e - 1)) & 1)
        self.right, self.half, self.rounds = right, np.maximum(right - 1, 0), (right > 0).astype(np.int64)
        self.zero_point, self.lo, self.hi = zero_point, lo, hi
        head = (*shape[:-1], self.n)
        self.t, self.u = np.empty(head, np.int64), np.empty(head, np.int64)

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        """Rescale ``acc`` (int64, values within int32; clobbered) and write the clamped result into ``out``."""
        if self.flat:  # both contiguous: views
            acc, out = acc.reshape(-1), out.reshape(-1)
        t, u = self.t, self.u
        np.left_shift(acc[..., :self.n], self.left, out=t)
        np.copyto(t, _wrap32(t))
        np.multiply(t, self.mult, out=t)
        np.add(t, 1 << 30, out=t)
        np.right_shift(t, 31, out=t)
        np.right_shift(t, self.half, out=u)  # the highest bit shifted out (none where e = 0)
        np.bitwise_and(u, self.rounds, out=u)
        np.right_shift(t, self.right, out=t)
        np.add(t, u, out=t)
        np.add(t, self.zero_point, out=t)
        np.clip(t, self.lo, self.hi, out=t)
        if self.rest is not None:
            self.rest(acc, out)
        out[..., :self.n] = t


class Fp32Requantizer:
    """XNNPACK's "fp32" requantization of an int32 accumulator, allocation-free: the accumulator
    converted to float32 (rounded to nearest even), times a float32 scale per output channel
    (the last axis), rounded to nearest even (``cvtps_epi32`` / ``lrintf``), plus the output
    zero point, clamped to ``[lo, hi]``. LiteRT's default interpreter requantizes the int8
    convolutions its XNNPACK delegate takes this way (``qs8`` / ``qs8_qc8w`` kernels), where its
    builtin kernels use :class:`Requantizer`'s fixed point.

    Parameters
    ----------
    shape : tuple of int
        Shape of the accumulator (channels last).
    scale : numpy.ndarray
        float32, length 1 or the channel count: XNNPACK's ``input_scale * filter_scale[c] / output_scale``
        computed in float32 (:func:`xnnpack_scales`).
    zero_point, lo, hi : int
        Output zero point and the (activation-clamped) quantized range.
    """

    def __init__(self, shape: tuple[int, ...], scale: np.ndarray, zero_point: int, lo: int, hi: int) -> None:
        self.scale = np.asarray(scale, np.float32).reshape(-1)
        self.zero_point = np.float32(zero_point)
        self.lo, self.hi = np.float32(lo - zero_point), np.float32(hi - zero_point)
        self.f = np.empty(shape, np.float32)

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        """Rescale ``acc`` (int64, values within int32) and write the clamped result into ``out``."""
        f = self.f
        np.copyto(f, acc, casting="unsafe")  # int64 -> float32: one rounding for |acc| < 2**53
        np.multiply(f, self.scale, out=f)
        np.rint(f, out=f)  # halves to even, as the FPU's default rounding mode
        np.clip(f, self.lo, self.hi, out=f)
        np.add(f, self.zero_point, out=f)
        np.copyto(out, f, casting="unsafe")


def xnnpack_scales(s_in: float, s_w: np.ndarray, s_out: float) -> np.ndarray:
    """XNNPACK's per-channel requantization scales, ``input_scale * kernel_scale[c] / output_scale``
    in float32 arithmetic (``xnn_create_convolution2d_nhwc_qs8_qc8w``; per tensor alike)."""
    return (np.float32(s_in) * np.asarray(s_w, np.float32).reshape(-1)) / np.float32(s_out)


def output_bounds(node, info) -> tuple[int, int]:
    """The clamp range of ``node``'s fused activation on its quantized output ``info``: TFLite's
    ``CalculateActivationRangeQuantized`` (:meth:`FusedActivation.quantized_bounds`). A fused
    TANH or SIGN_BIT leaves the full range, as in TFLite, where it is silently a no-op on the
    ops that call this."""
    scale, zp = per_tensor(node, info, "output")
    return node.activation.quantized_bounds(scale, zp, info.dtype)


def per_tensor(node, info, what: str) -> tuple[float, int]:
    """(scale, zero_point) of a per-tensor quantized tensor; ``UnsupportedOpError`` otherwise."""
    q = info.quant
    if q is None or q.scale.size != 1:
        got = "no quantization" if q is None else f"{q.scale.size} scales"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} must be quantized per tensor, got {got}")
    return float(q.scale[0]), int(q.zero_point[0])


# -- dynamic-range ("hybrid") kernels: float activations quantized per row at run time --------

def _round_away(x: np.ndarray) -> np.ndarray:
    """C's ``round`` (halves away from zero), which TFLite's ``TfLiteRound`` is; numpy rounds halves to even."""
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x)


def quantize_rows(x: np.ndarray, asymmetric: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row of the 2-D float32 ``x`` quantized to int8 on its own: TFLite's
    ``BatchQuantizeFloats``, how hybrid kernels quantize their float input per batch.

    Returns ``(q, scale, zero_point)``: int8 rows, one float32 scale and one int32 zero point
    per row, with ``x ~ scale * (q - zero_point)``. Symmetric (``SymmetricQuantizeFloats``):
    scale ``max|row| / 127``, values in [-127, 127], zero point 0. Asymmetric
    (``AsymmetricQuantizeFloats``, the ops' ``asymmetric_quantize_inputs``): the row's range
    widened to hold 0, over [-128, 127], scale and nudged zero point computed in double as
    TFLite does. An all-zero row gets scale 1 and zeros.
    """
    x = np.asarray(x, np.float32)
    lo, hi = x.min(axis=1), x.max(axis=1)
    if asymmetric:
        rmin = np.minimum(lo, np.float32(0)).astype(np.float64)
        rmax = np.maximum(hi, np.float32(0)).astype(np.float64)
        flat = rmin == rmax
        scale = (rmax - rmin) / 255.0
        scale[flat] = 1.0
        below, above = rmin / scale, rmax / scale
        zp_real = np.where(128.0 + np.abs(below) < 127.0 + np.abs(above), -128.0 - below, 127.0 - above)
        zp = np.clip(_round_away(zp_real), -128, 127).astype(np.int32)  # = TFLite's nudging to [-128, 127]
        zp[flat] = 0
        sf = scale.astype(np.float32)
        v = x * (1.0 / sf.astype(np.float64)).astype(np.float32)[:, None]  # TFLite: float inv = 1.0 / scale
        v += zp.astype(np.float32)[:, None]
        bounds = (np.float32(-128), np.float32(127))
    else:
        rng = np.maximum(np.abs(lo), np.abs(hi))
        flat = rng == 0
        rng[flat] = 1
        sf = rng / np.float32(127)
        sf[flat] = 1
        v = x * (np.float32(127) / rng)[:, None]
        zp = np.zeros(x.shape[0], np.int32)
        bounds = (np.float32(-127), np.float32(127))
    q = _round_away(v)
    np.maximum(q, bounds[0], out=q)
    np.minimum(q, bounds[1], out=q)
    q[flat] = 0
    return q.astype(np.int8), sf, zp


def hybrid_matmul(q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, w: np.ndarray, w_scale: np.ndarray,
                  row_sums: np.ndarray | None) -> np.ndarray:
    """``x @ w`` for rows ``x`` given as :func:`quantize_rows` made them and int8 weight values ``w``
    ``[in, out]`` with scale ``w_scale`` (a scalar or one per output column): TFLite's hybrid
    ``MatrixBatchVectorMultiplyAccumulate``. The integer dot product (less ``zero_point`` times
    the weight column's sum, ``row_sums``, when the input was quantized asymmetrically) is
    converted to float32 and multiplied by the float32 product of the row's and the weight's
    scales. Returns float32 ``[rows, out]``.

    ``w`` (and ``row_sums``) hold the integers in a float dtype where BLAS sums them exactly:
    float32 when ``in * 128 * 127 < 2**24`` (every partial sum is an integer float32 represents;
    the final subtraction then rounds once, as the int32-to-float conversion does), else float64."""
    acc = q.astype(w.dtype) @ w
    if row_sums is not None:
        acc -= zero_point[:, None].astype(w.dtype) * row_sums[None, :]
    both = scale[:, None] * np.asarray(w_scale, np.float32).reshape(1, -1)
    return acc.astype(np.float32) * both
