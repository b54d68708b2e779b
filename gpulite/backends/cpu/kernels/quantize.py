"""QUANTIZE and DEQUANTIZE at run time (constant ones are folded at load by passes.py).

QUANTIZE float32 -> int8/uint8/int16 is LiteRT's ``AffineQuantize``: ``x / scale`` in double
(``QuantizationParams.scale`` is a double), rounded half away from zero (``TfLiteRound``),
plus the zero point, clamped. Integer -> integer QUANTIZE is ``Requantize`` through
``MultiplyByQuantizedMultiplier``, done as a table over every input value.
DEQUANTIZE is ``(q - zero_point) * scale`` in float32, per tensor or per channel.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.quantized_elementwise import int_lut
from gpulite.backends.cpu.quant import QRANGE, multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node, TensorInfo

Run = Callable[[], None]
_I8, _U8, _I16, _F16, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.float16, np.float32))
# Integer conversions LiteRT's quantize.cc accepts: input dtype -> allowed output dtypes.
_REQUANTIZE = {_I8: (_I8, _U8), _U8: (_I8, _U8), _I16: (_I8, _I16)}


def _same_shape(node: Node, ctx) -> tuple[np.ndarray, np.ndarray]:
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(x.shape)} but output {list(out.shape)}")
    return x, out


def _per_tensor(node: Node, t: TensorInfo) -> tuple[float, int]:
    if t.quant is None or t.quant.scale.size != 1:
        got = "none" if t.quant is None else f"{t.quant.scale.size} scales"
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"tensor {t.index} ({t.name!r}) needs per-tensor quantization, got {got}")
    return float(np.float32(t.quant.scale[0])), int(t.quant.zero_point[0])


@register_kernel("QUANTIZE", "cpu")
def quantize(node: Node, ctx) -> Run:
    """QUANTIZE: float32 -> int8/uint8/int16, or requantize int8/uint8/int16 -> int8/uint8/int16."""
    x, out = _same_shape(node, ctx)
    src, dst = ctx.in_info(0).dtype, ctx.out_info(0).dtype
    so, zpo = _per_tensor(node, ctx.out_info(0))
    if src == _F32 and dst in (_I8, _U8, _I16):
        return _affine_quantize(x, out, so, zpo)
    if dst not in _REQUANTIZE.get(src, ()):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{src} -> {dst} is not a conversion LiteRT "
                                 "supports (float32 -> int8/uint8/int16, int8/uint8 -> int8/uint8, int16 -> int8/int16)")
    si, zpi = _per_tensor(node, ctx.in_info(0))
    m, sh = quantize_multiplier(float(np.float64(si) / np.float64(so)))
    qmin, qmax = QRANGE[src]
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    lo, hi = QRANGE[dst]
    return int_lut(np.clip(multiply_by_quantized_multiplier(vals - zpi, m, sh) + zpo, lo, hi), ctx)


def _affine_quantize(x: np.ndarray, out: np.ndarray, scale: float, zp: int) -> Run:
    lo, hi = QRANGE[out.dtype]
    scale64 = np.float64(scale)  # a numpy float64 keeps the division in double precision
    v, r = np.empty(x.shape, np.float64), np.empty(x.shape, np.float64)

    def run() -> None:
        np.divide(x, scale64, out=v)
        # Round half away from zero: trunc, then the fraction doubled and truncated is -1, 0 or 1.
        np.trunc(v, out=r)
        np.subtract(v, r, out=v)
        np.multiply(v, 2.0, out=v)
        np.trunc(v, out=v)
        np.add(r, v, out=r)
        np.add(r, zp, out=r)
        np.clip(r, lo, hi, out=r)
        np.copyto(out, r, casting="unsafe")
    return run


@register_kernel("DEQUANTIZE", "cpu")
def dequantize(node: Node, ctx) -> Run:
    """DEQUANTIZE: int8/uint8/int16 (per tensor or per channel) or float16 -> float32."""
    x, out = _same_shape(node, ctx)
    ti, dst = ctx.in_info(0), ctx.out_info(0).dtype
    if dst != _F32:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"output must be float32, got {dst}")
    if ti.dtype == _F16:
        return lambda: np.copyto(out, x)
    if ti.dtype not in (_I8, _U8, _I16) or ti.quant is None or ti.quant.scale.size == 0:
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"input must be quantized int8/uint8/int16 or float16, got {ti.dtype} "
                                 f"{'with' if ti.quant is not None else 'without'} quantization")
    q = ti.quant
    scale, zp = q.scale.astype(np.float32), q.zero_point.astype(np.float32)
    if q.scale.size > 1:
        if not (0 <= q.axis < x.ndim and x.shape[q.axis] == q.scale.size):
            raise ShapeError(f"node {node.index} (DEQUANTIZE): {q.scale.size} scales along axis {q.axis} "
                             f"do not fit input shape {list(x.shape)}")
        bshape = [1] * x.ndim
        bshape[q.axis] = -1
        scale, zp = scale.reshape(bshape), zp.reshape(bshape)
    else:
        scale, zp = scale[0], zp[0]

    def run() -> None:
        # Integers up to 16 bits and their difference are exact in float32, so only the
        # product rounds, once, exactly as LiteRT's (double or float) product does.
        np.copyto(out, x, casting="unsafe")
        np.subtract(out, zp, out=out)
        np.multiply(out, scale, out=out)
    return run
