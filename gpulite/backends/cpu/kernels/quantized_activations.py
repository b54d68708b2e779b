"""int8/uint8 LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, PRELU and the RELU family, as LiteRT computes
them: by table.

LOGISTIC and TANH follow LiteRT's ``PopulateLookupTable`` (activations.cc): each input value
dequantized, the float function in float32, ``std::round`` to the output scale. The RELU
family follows ``QuantizedReluX``: requantize with ``MultiplyByQuantizedMultiplier``, then
clamp to the activation's bounds. XNNPACK computes the same tables for these ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import int_lut, pair_lookup, roll_signed, scale_zp
from gpulite.backends.cpu.quant import (
    QRANGE,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
)
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast
from gpulite.model.opdefs import FusedActivation

Run = Callable[[], None]


def unary_params(node: Node, ctx) -> tuple[float, int, float, int, np.dtype]:
    """``(in scale, in zero point, out scale, out zero point, dtype)`` of a quantized unary node whose
    input and output share dtype and shape (UnsupportedOpError / ShapeError otherwise)."""
    ii, io = ctx.in_info(0), ctx.out_info(0)
    if ii.dtype != io.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input {ii.dtype} but output {io.dtype}")
    if ctx.input(0).shape != ctx.output(0).shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(ctx.input(0).shape)} but output "
                         f"{list(ctx.output(0).shape)}")
    (si, zpi), (so, zpo) = scale_zp(node, ii), scale_zp(node, io)
    return si, zpi, so, zpo, io.dtype


def float_lut(node: Node, ctx, fn: Callable[[np.ndarray], np.ndarray],
               out_scale: float | None, rounding: str = "away") -> Run:
    """LiteRT's ``PopulateLookupTable``: every input value dequantized, transformed in float32,
    multiplied by ``1 / s_out`` in float32 and requantized, clamped. ``rounding``: ``"away"``
    (``TfLiteRound`` then the zero point, LUTPopulate), ``"trunc"`` (a C cast, then the zero
    point) or ``"even"`` (the zero point added in float32, then ``lrintf``: XNNPACK's tables).
    A NaN (e.g. SQRT of a negative, which LiteRT rejects at invoke) becomes the zero point."""
    si, zpi, so, zpo, dt = unary_params(node, ctx)
    if out_scale is not None and so != out_scale:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{dt} output must have scale "
                                 f"{out_scale}, got {so}")
    qmin, qmax = QRANGE[dt]
    vals = np.arange(qmin, qmax + 1, dtype=np.int32)
    deq = np.float32(si) * (vals - zpi).astype(np.float32)
    with np.errstate(all="ignore"):
        scaled = fn(deq) * (np.float32(1) / np.float32(so))
        if rounding == "even":
            rounded = np.rint(scaled + np.float32(zpo)) - zpo
        elif rounding == "trunc":
            rounded = np.trunc(scaled)
        else:
            rounded = np.sign(scaled) * np.floor(np.abs(scaled).astype(np.float64) + 0.5)
        rounded = np.clip(np.nan_to_num(rounded.astype(np.float64), nan=0.0), qmin - zpo - 1, qmax - zpo + 1)
    return int_lut(np.clip(rounded + zpo, qmin, qmax), ctx)


def _logistic(x: np.ndarray) -> np.ndarray:
    # 1.0f / (1.0f + std::exp(-x)) in float32; expf evaluated in double and rounded once.
    e = np.exp(-x.astype(np.float64)).astype(np.float32)
    return (np.float32(1.0) / (np.float32(1.0) + e)).astype(np.float32)


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)


def quantized_logistic(node: Node, ctx) -> Run:
    """int8/uint8 LOGISTIC; LiteRT requires output scale 1/256 (zero point -128 / 0 by convention)."""
    return float_lut(node, ctx, _logistic, 1 / 256)


def quantized_tanh(node: Node, ctx) -> Run:
    """int8/uint8 TANH (conventionally output scale 1/128, zero point 0 / 128; LiteRT checks neither)."""
    return float_lut(node, ctx, _tanh, None)


def quantized_relu(node: Node, ctx) -> Run:
    """int8/uint8 RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1: LiteRT's ``QuantizedReluX``.

    The input is rescaled to the output's quantization with ``MultiplyByQuantizedMultiplier``
    and clamped to the op's range quantized as ``CalculateActivationRangeQuantized`` does
    (:meth:`FusedActivation.quantized_bounds`).
    """
    si, zpi, so, zpo, dt = unary_params(node, ctx)
    qmin, qmax = QRANGE[dt]
    act = FusedActivation.of_op(node.op)
    if act is not None:
        act_lo, act_hi = act.quantized_bounds(so, zpo, dt)
    else:  # RELU_0_TO_1 (no fused activation of that name): QuantizedReluX(0, 1), roundf of a float32 quotient
        act_lo, act_hi = (zpo + int(np.sign(v) * math.floor(abs(v) + 0.5))
                          for v in (float(np.float32(0.0) / np.float32(so)), float(np.float32(1.0) / np.float32(so))))
        act_lo, act_hi = max(qmin, act_lo), min(qmax, act_hi)
    # activations.cc: input->params.scale / output->params.scale, divided in float32
    m, sh = quantize_multiplier(float(np.float32(si) / np.float32(so)))
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    res = multiply_by_quantized_multiplier(vals - zpi, m, sh) + zpo
    return int_lut(np.clip(res, act_lo, act_hi), ctx)


def _srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp's int16 ``SaturatingRoundingDoublingHighMul`` (C division truncates)."""
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    res = np.where(nudged >= 0, nudged >> 15, -((-nudged) >> 15))
    return np.where((a == b) & (a == -(1 << 15)), (1 << 15) - 1, res)


def _saturating_left_shift16(x: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(x * (1 << amount), -(1 << 15), (1 << 15) - 1)


def _int16_multiplier(real: np.float32) -> tuple[int, int]:
    """``QuantizeMultiplier`` then ``DownScaleInt32ToInt16Multiplier``: (Q15 multiplier, exponent)."""
    m, e = quantize_multiplier(float(real))
    return (1 << 15) - 1 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16, e


def quantized_hard_swish(node: Node, ctx) -> Run:
    """int8/uint8 HARD_SWISH: TFLite's fixed-point ``reference_ops::HardSwish`` as a table.

    The input on a "hires" scale (``x << 7``) is multiplied once onto the output scale and once
    onto a "relu-ish" scale where 3.0 is 2**15, which is clamped to [-1, 1], mapped to [0, 1]
    and multiplies the former (``SaturatingDoublingHighMul``, truncating); then a rounding shift
    and the output zero point. XNNPACK computes the same table for this op.
    """
    si, zpi, so, zpo, dt = unary_params(node, ctx)
    hires = np.float32(1.0 / 128.0) * np.float32(si)
    out_m, out_e = _int16_multiplier(hires / np.float32(so))
    relu_m, relu_e = _int16_multiplier(hires / np.float32(3.0 / 32768.0))
    if out_e > 0:  # activations.cc: TF_LITE_ENSURE(output_multiplier_exponent <= 0)
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input scale {si} / output scale {so} is too "
                                 "large for LiteRT's quantized HARD_SWISH (exponent > 0)")
    qmin, qmax = QRANGE[dt]
    hi_in = (np.arange(qmin, qmax + 1, dtype=np.int64) - zpi) * (1 << 7)
    on_out = _srdhm16(hi_in, out_m)
    relu = hi_in
    if relu_e > 0:
        relu = _saturating_left_shift16(relu, relu_e - 1)
    relu = _srdhm16(relu, relu_m)
    if relu_e > 0:
        relu = _saturating_left_shift16(relu, 1)
    if relu_e < 0:
        relu = rounding_divide_by_pot(relu, -relu_e)
    relu = (relu + (1 << 15)) >> 1
    prod = relu * on_out
    pre = np.where(prod >= 0, prod >> 15, -((-prod) >> 15))
    pre = np.where((relu == on_out) & (relu == -(1 << 15)), (1 << 15) - 1, pre)
    res = rounding_divide_by_pot(pre, -out_e) + zpo
    return int_lut(np.clip(res, qmin, qmax), ctx)


def _xnn_lrelu_accepts(positive: np.float32, negative: np.float32) -> bool:
    """The scale ranges XNNPACK's quantized leaky ReLU takes (``xnn_init_qs8_lrelu_*_params``)."""
    return bool(2.0 ** -8 <= positive <= 2.0 ** 7 and -float.fromhex("0x1.FFFC00p+6") <= negative <= 2.0 ** 7
                and abs(negative) >= 2.0 ** -8)


def quantized_leaky_relu(node: Node, ctx) -> Run:
    """int8/uint8 LEAKY_RELU as LiteRT's default path computes it, by table.

    Where XNNPACK takes it (scale ratios in its range), its ``qs8/qu8-vlrelu``: 8-bit fixed-point
    multipliers ``lrintf(256 * s_in / s_out)`` (times ``alpha`` for negative inputs, float32) and
    ``((x - zp_in) * m + 128) >> 8`` plus the output zero point. Elsewhere (and for int16)
    TFLite's ``QuantizeLeakyRelu``: ``MultiplyByQuantizedMultiplier`` by ``s_in / s_out`` or
    ``s_in * alpha / s_out`` (float32), plus the output zero point.
    """
    si, zpi, so, zpo, dt = unary_params(node, ctx)
    alpha = np.float32(getattr(node.options, "alpha", 0.0))
    qmin, qmax = QRANGE[dt]
    v = np.arange(qmin, qmax + 1, dtype=np.int64) - zpi
    positive = np.float32(si) / np.float32(so)
    negative = positive * alpha
    if dt.itemsize == 1 and _xnn_lrelu_accepts(positive, negative):  # XNNPACK has no int16
        pm, nm = (int(np.rint(np.float32(256) * s)) for s in (positive, negative))
        res = ((np.where(v >= 0, pm, nm) * v + 128) >> 8) + zpo
    else:
        # leaky_relu.cc computes both ratios in float32 (double-ratio ties round one code off)
        m1, s1 = quantize_multiplier(float(positive))
        m2, s2 = quantize_multiplier(float(np.float32(np.float32(si) * alpha) / np.float32(so)))
        res = np.where(v >= 0, multiply_by_quantized_multiplier(v, m1, s1),
                       multiply_by_quantized_multiplier(v, m2, s2)) + zpo
    return int_lut(np.clip(res, qmin, qmax), ctx)


def prelu_multipliers(si: float, sa: float, so: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """8-bit PRELU's rescales (double): of ``x - zp_in`` by ``s_in / s_out`` (x >= zp_in) and of
    ``(x - zp_in) * (a - zp_a)`` by ``s_in * s_a / s_out``."""
    return (quantize_multiplier(float(np.float64(si) / np.float64(so))),
            quantize_multiplier(float(np.float64(si) * np.float64(sa) / np.float64(so))))


def quantized_prelu(node: Node, ctx) -> Run:
    """int8/uint8 PRELU: TFLite's ``BroadcastPrelu4DSlow``, as a table over (input, alpha) codes.

    ``x - zp_in`` rescaled by ``s_in / s_out`` where it is >= 0, else ``(x - zp_in) * (a - zp_a)``
    by ``s_in * s_a / s_out`` (``MultiplyByQuantizedMultiplier``, double), plus the output zero
    point, clamped. LiteRT's default path gives the same codes.
    """
    ii, ia, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if ii.dtype == np.int16:
        return _int16_prelu(node, ctx)
    if not (ii.dtype == ia.dtype == io.dtype):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized input, alpha and output must share a "
                                 f"dtype, got {ii.dtype}, {ia.dtype} -> {io.dtype}")
    x, a, out, (si, zpi), (sa, zpa), (so, zpo) = _prelu_operands(node, ctx)
    qmin, qmax = QRANGE[io.dtype]
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    xv, av = vals[:, None] - zpi, vals[None, :] - zpa
    (m1, s1), (m2, s2) = prelu_multipliers(si, sa, so)
    res = np.where(xv >= 0, multiply_by_quantized_multiplier(np.broadcast_to(xv, (256, 256)), m1, s1),
                   multiply_by_quantized_multiplier(xv * av, m2, s2)) + zpo
    table = roll_signed(np.clip(res, qmin, qmax).astype(io.dtype), io.dtype, (0, 1))
    return pair_lookup(np.ascontiguousarray(table.reshape(-1)), x.view(np.uint8), a.view(np.uint8), out, None)



def _prelu_operands(node: Node, ctx) -> tuple:
    """A quantized PRELU's input, alpha and output arrays (shapes checked: alpha broadcasts to
    the input's shape, the output's), then their ``(scale, zero point)`` pairs."""
    x, a, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if x.shape != out.shape or broadcast(x.shape, a.shape, node) != out.shape:
        raise ShapeError(f"node {node.index} (PRELU): input {list(x.shape)} and alpha {list(a.shape)} must "
                         f"broadcast to the input's shape, output is {list(out.shape)}")
    ii, ia, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    return x, a, out, scale_zp(node, ii), scale_zp(node, ia), scale_zp(node, io)


def prelu16_multipliers(si: float, sa: float, so: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """int16 PRELU's two rescales (:func:`prelu_multipliers`'), their ratios in float32 as activations.cc."""
    f = np.float32
    return quantize_multiplier(float(f(si) / f(so))), quantize_multiplier(float(f(f(si) * f(sa)) / f(so)))


def _int16_prelu(node: Node, ctx) -> Run:
    """int16 PRELU (16x8 mode) as TFLite's ``reference_ops::Prelu`` / ``BroadcastPrelu4DSlow``: int16
    input and output, int8 alpha (LiteRT reads the alpha tensor as int8 whatever its type); the same
    two rescales as 8-bit, with the multipliers' ratios computed in float32 as activations.cc does.
    Computed per invoke in int64 (65,536 x 256 pairs make no table)."""
    ia, io = ctx.in_info(1), ctx.out_info(0)
    if io.dtype != np.int16 or ia.dtype != np.int8:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 PRELU takes an int8 alpha and an int16 output "
                                 f"(LiteRT reads alpha as int8), got alpha {ia.dtype}, output {io.dtype}")
    x, a, out, (si, zpi), (sa, zpa), (so, zpo) = _prelu_operands(node, ctx)
    (m1, s1), (m2, s2) = prelu16_multipliers(si, sa, so)

    def run() -> None:
        xv, av = np.broadcast_arrays(x.astype(np.int64) - zpi, a.astype(np.int64) - zpa)
        res = np.where(xv >= 0, multiply_by_quantized_multiplier(xv, m1, s1),
                       multiply_by_quantized_multiplier(xv * av, m2, s2)) + zpo
        np.copyto(out, np.clip(res, -32768, 32767), casting="unsafe")
    return run
