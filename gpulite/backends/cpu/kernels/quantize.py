"""QUANTIZE and DEQUANTIZE at run time (constant ones are folded at load by passes.py).

QUANTIZE float32 -> int8/uint8/int16 is what LiteRT computes on x86, builtin kernel and
XNNPACK alike: ``x * (1 / scale)`` in float32, rounded half to *even*, plus the zero point,
clamped. (TFLite's reference kernel divides and rounds half away from zero; LiteRT's x86
build does not, and the tests hold gpulite to LiteRT.) Integer -> integer QUANTIZE is a
table over every input value of whichever requantization LiteRT runs: XNNPACK's for
same-type 8-bit in its ratio range, else TFLite's ``Requantize``.
DEQUANTIZE is ``(q - zero_point) * scale`` in float32, per tensor or per channel.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import int_lut, scale_zp
from gpulite.backends.cpu.kernels.quantized_binary import srdhm
from gpulite.backends.cpu.quant import QRANGE, multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

Run = Callable[[], None]
_I8, _U8, _I16, _I32, _F16, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.float16,
                                                            np.float32))
# Integer conversions LiteRT's quantize.cc accepts: input dtype -> allowed output dtypes.
_REQUANTIZE = {_I8: (_I8, _U8, _I16), _U8: (_I8, _U8, _I16), _I16: (_I8, _I16, _I32), _I32: (_I8, _I16)}
# Input/output scale ratios for which LiteRT's XNNPACK delegate runs an 8-bit requantize.
_XNN_RATIO = (2.0 ** -8, 2.0 ** 7)


def _same_shape(node: Node, ctx) -> tuple[np.ndarray, np.ndarray]:
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(x.shape)} but output {list(out.shape)}")
    return x, out


@register_kernel(Op.QUANTIZE, "cpu")
def quantize(node: Node, ctx) -> Run:
    """QUANTIZE: float32 -> int8/uint8/int16, or requantize among int8/uint8/int16/int32 (LiteRT's pairs)."""
    x, out = _same_shape(node, ctx)
    src, dst = ctx.in_info(0).dtype, ctx.out_info(0).dtype
    so, zpo = scale_zp(node, ctx.out_info(0))
    if src == _F32 and dst in (_I8, _U8, _I16):
        return _affine_quantize(x, out, so, zpo)
    if dst not in _REQUANTIZE.get(src, ()):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{src} -> {dst} is not a conversion LiteRT supports "
                                 "(float32 -> int8/uint8/int16, int8/uint8 -> int8/uint8/int16, int16 -> "
                                 "int8/int16/int32, int32 -> int8/int16)")
    si, zpi = scale_zp(node, ctx.in_info(0))
    if src == dst == _I16 and (zpi, zpo) != (0, 0):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 -> int16 needs zero points 0 (as LiteRT), got "
                                 f"{zpi} and {zpo}")
    if src == _I32:
        return _requantize_int32(x, out, si, zpi, so, zpo)
    qmin, qmax = QRANGE[src]
    centred = np.arange(qmin, qmax + 1, dtype=np.int64) - zpi  # every input value, minus its zero point
    lo, hi = int(np.iinfo(dst).min), int(np.iinfo(dst).max)
    ratio = float(np.float32(si) / np.float32(so))
    if src == dst and src in (_I8, _U8) and _XNN_RATIO[0] <= ratio <= _XNN_RATIO[1]:
        # XNNPACK's qs8/qu8 convert: an 8.8 fixed-point multiplier, one rounding shift.
        mult = int(np.rint(np.float32(256) * np.float32(ratio)))
        return int_lut(np.clip((centred * mult + 0x80 + (zpo << 8)) >> 8, lo, hi), ctx)
    m, sh = quantize_multiplier(float(np.float64(si) / np.float64(so)))
    scalar = np.clip(multiply_by_quantized_multiplier(centred, m, sh) + zpo, lo, hi)
    if src == _I16 or dst not in (_I8, _U8):  # reference_ops::Requantize (no optimized form)
        return int_lut(scalar, ctx)
    # TFLite's 8-bit Requantize: a NEON loop (rounding the final shift half up) over blocks of
    # 16, the scalar MultiplyByQuantizedMultiplier for the rest.
    h = srdhm(centred << max(sh, 0), m)
    right = max(-sh, 0)
    neon = np.clip(((h + ((1 << right) >> 1)) >> right) + zpo, lo, hi)
    return int_lut(neon, ctx, tail_by_value=scalar, block=16)


def _requantize_int32(x: np.ndarray, out: np.ndarray, si: float, zpi: int, so: float, zpo: int) -> Run:
    """int32 -> int8/int16 QUANTIZE: TFLite's ``reference_ops::Requantize`` per element, int32
    arithmetic wrapping as in C (65,536+ input values: no table)."""
    m, sh = quantize_multiplier(float(np.float64(si) / np.float64(so)))
    lo, hi = QRANGE[np.dtype(out.dtype)]

    def run() -> None:
        centred = ((x.astype(np.int64) - zpi + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        np.copyto(out, np.clip(multiply_by_quantized_multiplier(centred, m, sh) + zpo, lo, hi), casting="unsafe")
    return run


def _affine_quantize(x: np.ndarray, out: np.ndarray, scale: float, zp: int) -> Run:
    lo, hi = QRANGE[out.dtype]
    inv = np.float32(1) / np.float32(scale)
    v = np.empty(x.shape, np.float32)

    def run() -> None:
        # LiteRT (builtin and XNNPACK alike) multiplies by the float32 reciprocal of the scale
        # and rounds half to even; np.rint does the same.
        np.multiply(x, inv, out=v)
        np.rint(v, out=v)
        np.add(v, np.float32(zp), out=v)
        np.clip(v, lo, hi, out=v)
        np.copyto(out, v, casting="unsafe")
    return run


@register_kernel(Op.DEQUANTIZE, "cpu")
def dequantize(node: Node, ctx) -> Run:
    """DEQUANTIZE: int8/uint8/int16 (per tensor or per channel) or float16 -> float32."""
    x, out = _same_shape(node, ctx)
    ti, dst = ctx.in_info(0), ctx.out_info(0).dtype
    if dst != _F32:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"output must be float32, got {dst}")
    if ti.dtype == _F16:
        def run_f16() -> None:
            np.copyto(out, x)
        return run_f16
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
