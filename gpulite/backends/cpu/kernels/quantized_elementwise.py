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

from gpulite.backends.cpu.kernels import quantized_binary as qb
from gpulite.backends.cpu.quant import QRANGE, multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node, TensorInfo
from gpulite.graph.shapes import broadcast

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


def _binary_tables(node: Node, s1, z1, s2, z2, so, zo, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """(body table, tail table or None), each (256, 256) indexed by input values from qmin."""
    qmin, qmax = QRANGE[dtype]
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    x1, x2, args = vals[:, None], vals[None, :], (s1, z1, s2, z2, so, zo)
    op, tail = node.op, None
    try:
        if qb.xnn_accepts(op, s1, s2, so):
            lo, hi = qb.xnn_activation_range(node.activation, so, zo, dtype)
            body = (qb.xnn_mul if op == "MUL" else qb.xnn_add)(x1, x2, *args, sub=op == "SUB")
        else:
            lo, hi = activation_range(node.activation, so, zo, dtype)
            if op == "ADD":
                body = qb.tflite_add_neon(x1, x2, *args, dtype)
                tail = np.clip(qb.tflite_add_scalar(x1, x2, *args, sub=False), lo, hi)
            elif op == "SUB":
                body = qb.tflite_add_scalar(x1, x2, *args, sub=True)
            else:
                body = qb.tflite_mul(x1, x2, *args)
    except (KeyError, ValueError):
        raise UnsupportedOpError(op, node.index, "cpu", f"fused activation {node.activation} on a "
                                 "quantized output (TFLite has RELU, RELU6, RELU_N1_TO_1 only)") from None
    return np.clip(body, lo, hi), tail


def _by_bits(table: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Reorder a value-indexed (256, 256) table so the inputs' uint8 bit patterns index it."""
    t = table.astype(dtype)
    return np.roll(t, (128, 128), axis=(0, 1)) if dtype == np.int8 else t


def _binary_factory(node: Node, ctx) -> Callable[[], None]:
    ia, ib, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (ia.dtype == ib.dtype == io.dtype):
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"quantized inputs and output must share a dtype, got "
                                 f"{ia.dtype}, {ib.dtype} -> {io.dtype}")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if broadcast(a.shape, b.shape, node) != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): inputs {list(a.shape)} and {list(b.shape)} "
                         f"do not broadcast to output {list(out.shape)}")
    (s1, z1), (s2, z2), (so, zo) = _scale_zp(node, ia), _scale_zp(node, ib), _scale_zp(node, io)
    body, tail = _binary_tables(node, s1, z1, s2, z2, so, zo, io.dtype)
    au, bu = a.view(np.uint8), b.view(np.uint8)
    n_tail = out.size % qb.NEON_BLOCK[io.dtype] if a.shape == b.shape else 0
    if tail is not None and n_tail and not np.array_equal(tail, body):
        # TFLite's builtin ADD: its NEON loop covers all but the last size % block elements,
        # which run the scalar loop; a second table and a per-element offset pick the right one.
        flat = np.concatenate([_by_bits(body, io.dtype).reshape(-1), _by_bits(tail, io.dtype).reshape(-1)])
        pick = np.zeros(out.shape, np.intp)
        pick.reshape(-1)[out.size - n_tail:] = 1 << 16
        return _pair_lookup(flat, au, bu, out, pick)
    # Broadcast inputs fall back to the body formula everywhere (see quantized_binary.py).
    table = _by_bits(body, io.dtype)
    const_a, const_b = ctx.const(0), ctx.const(1)
    if const_b is not None and const_b.size == 1:
        return _lookup(np.ascontiguousarray(table[:, int(bu.reshape(-1)[0])]), au, out)
    if const_a is not None and const_a.size == 1:
        return _lookup(np.ascontiguousarray(table[int(au.reshape(-1)[0]), :]), bu, out)
    return _pair_lookup(np.ascontiguousarray(table.reshape(-1)), au, bu, out, None)


def _pair_lookup(flat: np.ndarray, au: np.ndarray, bu: np.ndarray, out: np.ndarray,
                 pick: np.ndarray | None) -> Callable[[], None]:
    """``out = flat[(a << 8 | b) + pick]`` through a preallocated index array."""
    idx = np.empty(out.shape, np.intp)

    def run() -> None:
        np.left_shift(au, _SHIFT, out=idx)
        np.bitwise_or(idx, bu, out=idx)
        if pick is not None:
            np.add(idx, pick, out=idx)
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


def int_lut(lut_by_value: np.ndarray, ctx, tail_by_value: np.ndarray | None = None,
            block: int = 16) -> Callable[[], None]:
    """Kernel ``out = lut[x]`` for an 8/16-bit input; ``lut_by_value[k]`` is the result for the
    k-th smallest input value (index 0 is the dtype's minimum).

    ``tail_by_value``, when given and different, is used instead for the last
    ``size % block`` elements: LiteRT's NEON loops leave those to a scalar loop that
    rounds differently.
    """
    dt, out = ctx.in_info(0).dtype, ctx.output(0)
    bits = np.dtype(f"u{dt.itemsize}")

    def by_bits(t: np.ndarray) -> np.ndarray:
        t = np.ascontiguousarray(t.astype(out.dtype))
        return np.roll(t, t.size // 2) if dt.kind == "i" else t  # the input's bit pattern indexes it
    lut = by_bits(lut_by_value)
    xu = ctx.input(0).view(bits)
    n_tail = out.size % block
    if tail_by_value is None or n_tail == 0 or np.array_equal(tail_by_value, lut_by_value):
        return _lookup(lut, xu, out)
    both = np.concatenate([lut, by_bits(tail_by_value)])
    idx = np.empty(out.shape, np.intp)
    tail, offset = idx.reshape(-1)[out.size - n_tail:], np.intp(lut.size)

    def run() -> None:
        np.copyto(idx, xu)
        np.add(tail, offset, out=tail)
        np.take(both, idx, out=out, mode="clip")
    return run


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
    op: _binary_factory for op in ("ADD", "SUB", "MUL")
}
