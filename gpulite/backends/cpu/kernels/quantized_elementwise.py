"""int8/uint8 ADD, SUB, MUL, LOGISTIC and TANH, bit-exact with LiteRT.

An 8-bit op has at most 256 x 256 distinct input pairs, so instead of replaying TFLite's
fixed-point pipeline per element at run time, the factory evaluates that pipeline (the
integer helpers in :mod:`gpulite.backends.cpu.quant`) once over every pair into a table, and
``run()`` is a table lookup: index = ``(a_bits << 8) | b_bits``. One input being a single
constant shrinks the table to 256 entries. LOGISTIC and TANH use LiteRT's own method, a
256-entry table of the float function (``PopulateLookupTable`` in activations.cc).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.quant import QRANGE, multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node, TensorInfo

_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))
_SHIFT = np.intp(8)


def is_quantized(t: TensorInfo) -> bool:
    """True for an int8/uint8 tensor carrying affine quantization."""
    return t.dtype in _EIGHT_BIT and t.quant is not None and t.quant.scale.size > 0


def _scale_zp(node: Node, t: TensorInfo) -> tuple[float, int]:
    if t.quant is None or t.quant.scale.size != 1:
        got = "none" if t.quant is None else f"{t.quant.scale.size} scales"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"needs per-tensor quantization on "
                                 f"tensor {t.index} ({t.name!r}), got {got}")
    return float(np.float32(t.quant.scale[0])), int(t.quant.zero_point[0])


def activation_range(name: str | None, scale: float, zp: int, dtype: np.dtype) -> tuple[int, int]:
    """TFLite's ``CalculateActivationRangeQuantized``: clamp bounds of a fused activation.

    ``f / scale`` is a float32 division and TfLiteRound rounds halves away from zero,
    both reproduced here so edge scales land on the same integer.
    """
    qmin, qmax = QRANGE[np.dtype(dtype)]

    def q(v: float) -> int:
        r = float(np.float32(v) / np.float32(scale))
        return zp + int(np.sign(r) * np.floor(abs(r) + 0.5))
    ranges = {None: (qmin, qmax), "RELU": (max(qmin, q(0.0)), qmax),
              "RELU6": (max(qmin, q(0.0)), min(qmax, q(6.0))),
              "RELU_N1_TO_1": (max(qmin, q(-1.0)), min(qmax, q(1.0)))}
    if name not in ranges:
        raise ValueError(f"fused activation {name!r} has no quantized form; expected one of {list(ranges)}")
    return ranges[name]


def _add_table(x1, x2, s1, s2, so, zp1, zp2, sub: bool):
    """AddElementwise / SubElementwise of optimized_integer_ops (8-bit: left_shift 20)."""
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = quantize_multiplier(s1 / twice_max)
    m2, sh2 = quantize_multiplier(s2 / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << 20) * so))
    if sub:  # sub.cc negates the second multiplier rather than the result
        m2 = -m2
    a = multiply_by_quantized_multiplier((x1 - zp1) << 20, m1, sh1)
    b = multiply_by_quantized_multiplier((x2 - zp2) << 20, m2, sh2)
    return multiply_by_quantized_multiplier(a + b, mo, sho)


def _mul_table(x1, x2, s1, s2, so, zp1, zp2, sub: bool):
    m, sh = quantize_multiplier(float(np.float64(s1) * np.float64(s2) / np.float64(so)))
    return multiply_by_quantized_multiplier((x1 - zp1) * (x2 - zp2), m, sh)


_TABLES = {"ADD": _add_table, "SUB": _add_table, "MUL": _mul_table}


def _binary_factory(node: Node, ctx) -> Callable[[], None]:
    ia, ib, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (ia.dtype == ib.dtype == io.dtype):
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"quantized inputs and output must share a dtype, got "
                                 f"{ia.dtype}, {ib.dtype} -> {io.dtype}")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if np.broadcast_shapes(a.shape, b.shape) != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): inputs {list(a.shape)} and {list(b.shape)} "
                         f"do not broadcast to output {list(out.shape)}")
    (s1, zp1), (s2, zp2), (so, zpo) = _scale_zp(node, ia), _scale_zp(node, ib), _scale_zp(node, io)
    try:
        lo, hi = activation_range(node.activation, so, zpo, io.dtype)
    except ValueError as e:
        raise UnsupportedOpError(node.op, node.index, "cpu", str(e)) from None
    qmin, qmax = QRANGE[io.dtype]
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    raw = _TABLES[node.op](vals[:, None], vals[None, :], s1, s2, so, zp1, zp2, node.op == "SUB")
    # Index tables by the inputs' bit patterns (uint8 views), so row/column k holds value k as
    # the dtype reads it: for int8 that is a roll by 128.
    table = np.clip(raw + zpo, lo, hi).astype(io.dtype)
    if io.dtype == np.int8:
        table = np.roll(table, (128, 128), axis=(0, 1))
    au, bu = a.view(np.uint8), b.view(np.uint8)
    const_a, const_b = ctx.const(0), ctx.const(1)
    if const_b is not None and const_b.size == 1:
        return _lookup(np.ascontiguousarray(table[:, int(bu.reshape(-1)[0])]), au, out)
    if const_a is not None and const_a.size == 1:
        return _lookup(np.ascontiguousarray(table[int(au.reshape(-1)[0]), :]), bu, out)
    flat = np.ascontiguousarray(table.reshape(-1))
    idx = np.empty(out.shape, np.intp)

    def run() -> None:
        np.left_shift(au, _SHIFT, out=idx)
        np.bitwise_or(idx, bu, out=idx)
        np.take(flat, idx, out=out, mode="clip")  # "clip" avoids take's buffered copy of out
    return run


def _lookup(lut: np.ndarray, xu: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """``out = lut[xu]`` broadcast to ``out``'s shape, through a preallocated index array."""
    idx = np.empty(out.shape, np.intp)

    def run() -> None:
        np.copyto(idx, xu)
        np.take(lut, idx, out=out, mode="clip")
    return run


def _unary_params(node: Node, ctx) -> tuple[float, int, float, int, np.dtype]:
    ii, io = ctx.in_info(0), ctx.out_info(0)
    if ii.dtype != io.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input {ii.dtype} but output {io.dtype}")
    if ctx.input(0).shape != ctx.output(0).shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(ctx.input(0).shape)} but output "
                         f"{list(ctx.output(0).shape)}")
    (si, zpi), (so, zpo) = _scale_zp(node, ii), _scale_zp(node, io)
    return si, zpi, so, zpo, io.dtype


def int_lut(lut_by_value: np.ndarray, ctx) -> Callable[[], None]:
    """Kernel ``out = lut[x]`` for an 8/16-bit input; ``lut_by_value[k]`` is the result for the
    k-th smallest input value (index 0 is the dtype's minimum)."""
    dt = ctx.in_info(0).dtype
    bits = np.dtype(f"u{dt.itemsize}")
    lut = np.ascontiguousarray(lut_by_value.astype(ctx.out_info(0).dtype))
    if dt.kind == "i":  # reorder so the input's unsigned bit pattern indexes it
        lut = np.roll(lut, lut.size // 2)
    return _lookup(lut, ctx.input(0).view(bits), ctx.output(0))


def _float_lut(node: Node, ctx, fn: Callable[[np.ndarray], np.ndarray],
               out_scale: float | None) -> Callable[[], None]:
    """LiteRT's ``PopulateLookupTable``: every input value dequantized, transformed in float32,
    requantized with round-half-away, clamped."""
    si, zpi, so, zpo, dt = _unary_params(node, ctx)
    if out_scale is not None and so != out_scale:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{dt} output must have scale "
                                 f"{out_scale}, got {so}")
    qmin, qmax = QRANGE[dt]
    vals = np.arange(qmin, qmax + 1, dtype=np.int32)
    deq = np.float32(si) * (vals - zpi).astype(np.float32)
    scaled = fn(deq) * (np.float32(1) / np.float32(so))
    rounded = np.sign(scaled) * np.floor(np.abs(scaled).astype(np.float64) + 0.5)
    return int_lut(np.clip(rounded + zpo, qmin, qmax), ctx)


def _logistic(x: np.ndarray) -> np.ndarray:
    # 1.0f / (1.0f + std::exp(-x)) in float32; expf evaluated in double and rounded once.
    e = np.exp(-x.astype(np.float64)).astype(np.float32)
    return (np.float32(1.0) / (np.float32(1.0) + e)).astype(np.float32)


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)


def quantized_logistic(node: Node, ctx) -> Callable[[], None]:
    """int8/uint8 LOGISTIC; LiteRT requires output scale 1/256 (zero point -128 / 0 by convention)."""
    return _float_lut(node, ctx, _logistic, 1 / 256)


def quantized_tanh(node: Node, ctx) -> Callable[[], None]:
    """int8/uint8 TANH (conventionally output scale 1/128, zero point 0 / 128; LiteRT checks neither)."""
    return _float_lut(node, ctx, _tanh, None)


def quantized_relu(lo: float, hi: float | None) -> Callable[[Node, object], Callable[[], None]]:
    """Factory maker for int8/uint8 RELU (hi None), RELU6, RELU_N1_TO_1: LiteRT's ``QuantizedReluX``.

    The input is rescaled to the output's quantization with ``MultiplyByQuantizedMultiplier``
    and clamped to ``[lo, hi]`` quantized with ``roundf(v / scale)`` (float32, half away).
    """
    def factory(node: Node, ctx) -> Callable[[], None]:
        si, zpi, so, zpo, dt = _unary_params(node, ctx)
        qmin, qmax = QRANGE[dt]

        def q(v: float) -> int:
            r = float(np.float32(v) / np.float32(so))
            return zpo + int(np.sign(r) * np.floor(abs(r) + 0.5))
        act_lo = max(qmin, q(lo))
        act_hi = qmax if hi is None else min(qmax, q(hi))
        m, sh = quantize_multiplier(float(np.float64(si) / np.float64(so)))
        vals = np.arange(qmin, qmax + 1, dtype=np.int64)
        res = multiply_by_quantized_multiplier(vals - zpi, m, sh) + zpo
        return int_lut(np.clip(res, act_lo, act_hi), ctx)
    return factory


QUANTIZED_BINARY: dict[str, Callable[[Node, object], Callable[[], None]]] = {
    op: _binary_factory for op in _TABLES
}
