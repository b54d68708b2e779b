"""int8/uint8 LOGISTIC, TANH and the RELU family, as LiteRT computes them: by table.

LOGISTIC and TANH follow LiteRT's ``PopulateLookupTable`` (activations.cc): each input value
dequantized, the float function in float32, ``std::round`` to the output scale. The RELU
family follows ``QuantizedReluX``: requantize with ``MultiplyByQuantizedMultiplier``, then
clamp to the activation's bounds. XNNPACK computes the same tables for these ops.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import int_lut, scale_zp
from gpulite.backends.cpu.quant import QRANGE, multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.model.opdefs import FusedActivation

Run = Callable[[], None]


def _unary_params(node: Node, ctx) -> tuple[float, int, float, int, np.dtype]:
    ii, io = ctx.in_info(0), ctx.out_info(0)
    if ii.dtype != io.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input {ii.dtype} but output {io.dtype}")
    if ctx.input(0).shape != ctx.output(0).shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(ctx.input(0).shape)} but output "
                         f"{list(ctx.output(0).shape)}")
    (si, zpi), (so, zpo) = scale_zp(node, ii), scale_zp(node, io)
    return si, zpi, so, zpo, io.dtype


def _float_lut(node: Node, ctx, fn: Callable[[np.ndarray], np.ndarray],
               out_scale: float | None) -> Run:
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


def quantized_logistic(node: Node, ctx) -> Run:
    """int8/uint8 LOGISTIC; LiteRT requires output scale 1/256 (zero point -128 / 0 by convention)."""
    return _float_lut(node, ctx, _logistic, 1 / 256)


def quantized_tanh(node: Node, ctx) -> Run:
    """int8/uint8 TANH (conventionally output scale 1/128, zero point 0 / 128; LiteRT checks neither)."""
    return _float_lut(node, ctx, _tanh, None)


def quantized_relu(node: Node, ctx) -> Run:
    """int8/uint8 RELU, RELU6, RELU_N1_TO_1: LiteRT's ``QuantizedReluX``.

    The input is rescaled to the output's quantization with ``MultiplyByQuantizedMultiplier``
    and clamped to the op's range quantized as ``CalculateActivationRangeQuantized`` does
    (:meth:`FusedActivation.quantized_bounds`).
    """
    si, zpi, so, zpo, dt = _unary_params(node, ctx)
    qmin, qmax = QRANGE[dt]
    act = FusedActivation.of_op(node.op)
    assert act is not None, node.op
    act_lo, act_hi = act.quantized_bounds(so, zpo, dt)
    m, sh = quantize_multiplier(float(np.float64(si) / np.float64(so)))
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    res = multiply_by_quantized_multiplier(vals - zpi, m, sh) + zpo
    return int_lut(np.clip(res, act_lo, act_hi), ctx)
