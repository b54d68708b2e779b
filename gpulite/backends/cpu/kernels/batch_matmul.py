"""BATCH_MATMUL, float: ``np.matmul`` on (optionally transposed) views, batch dims broadcast
(hybrid, a float LHS by a constant int8 RHS, in :mod:`.hybrid`); int8 and int16 exactly in
integers (:func:`_quantized`).

``adj_x``/``adj_y`` transpose the last two axes of an operand; a transposed view costs
nothing and numpy's matmul passes it to BLAS as a transpose flag.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.hybrid import hybrid_batch_matmul
from gpulite.backends.cpu.quant import (
    QRANGE,
    Fp32Requantizer,
    Requantizer,
    per_tensor,
    quantize_multiplier,
    xnnpack_scales,
)
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.model.opdefs import Op

_QUANTIZED = (np.dtype(np.int8), np.dtype(np.int16))


@register_kernel(Op.BATCH_MATMUL, "cpu")
def batch_matmul(node, ctx):
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    hybrid = a.dtype == out.dtype == np.float32 and b.dtype == np.int8
    quantized = a.dtype == b.dtype == out.dtype and a.dtype in _QUANTIZED
    if not (a.dtype == b.dtype == out.dtype == np.float32 or hybrid or quantized):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float32, int8, int16, or a float32 LHS by an "
                                 f"int8 RHS, is supported; got {a.dtype} x {b.dtype} -> {out.dtype}")
    if a.ndim < 2 or b.ndim < 2:
        raise ShapeError(f"node {node.index} (BATCH_MATMUL): operands must be at least 2-D, "
                         f"got {list(a.shape)} and {list(b.shape)}")
    o = node.options
    av = np.swapaxes(a, -1, -2) if getattr(o, "adj_x", False) else a
    bv = np.swapaxes(b, -1, -2) if getattr(o, "adj_y", False) else b
    try:
        shape = (*np.broadcast_shapes(av.shape[:-2], bv.shape[:-2]), av.shape[-2], bv.shape[-1])
    except ValueError:
        shape = None
    if shape is None or av.shape[-1] != bv.shape[-2] or shape != out.shape:
        raise ShapeError(f"node {node.index} (BATCH_MATMUL): {list(a.shape)} x {list(b.shape)} with "
                         f"adj_x={getattr(o, 'adj_x', False)}, adj_y={getattr(o, 'adj_y', False)} "
                         f"does not give the output shape {list(out.shape)}")
    if hybrid:
        return hybrid_batch_matmul(node, ctx, av, bv)
    if quantized:
        return _quantized(node, ctx, av, bv)
    if getattr(o, "adj_y", False) and ctx.const(1) is not None:
        bv = np.ascontiguousarray(bv)  # constant: transpose once so BLAS reads it row-major

    def run() -> None:
        np.matmul(av, bv, out=out)
    return run


def quantized_rescale(node, ctx) -> tuple[float, int, int, int]:
    """The rescale factor ``double(float(s_l * s_r)) / s_out`` (``GetQuantizedConvolutionMultipler``)
    of an int8 / int16 BATCH_MATMUL and its LHS, RHS and output zero points (int16: all 0)."""
    sl, zl = per_tensor(node, ctx.in_info(0), "LHS")
    sr, zr = per_tensor(node, ctx.in_info(1), "RHS")
    so, zo = per_tensor(node, ctx.out_info(0), "output")
    if ctx.out_info(0).dtype == np.int16 and (zl, zr, zo) != (0, 0, 0):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 needs zero points 0, got {(zl, zr, zo)}")
    return float(np.float32(sl) * np.float32(sr)) / float(np.float32(so)), zl, zr, zo


def xnnpack_fp32(ctx, zr: int) -> bool:
    """Whether default LiteRT runs this integer BATCH_MATMUL in XNNPACK (int8, RHS zero point 0)."""
    return ctx.out_info(0).dtype == np.int8 and zr == 0


def batch_matmul_scale(ctx) -> np.ndarray:
    """XNNPACK's float32 requantization scale ``s_l * s_r / s_out`` of an int8 BATCH_MATMUL."""
    return xnnpack_scales(ctx.in_info(0).quant.scale[0], ctx.in_info(1).quant.scale[0], ctx.out_info(0).quant.scale[0])


def _quantized(node, ctx, av: np.ndarray, bv: np.ndarray):
    """int8 / int16 BATCH_MATMUL as LiteRT computes it: ``sum((l - zp_l) * (r - zp_r))`` exactly
    (float64), rescaled by ``double(float(s_l * s_r)) / s_out`` (``GetQuantizedConvolutionMultipler``)
    plus the output zero point, clamped to the dtype.

    The rescale, measured against LiteRT 2.3: int8 with RHS zero point 0 runs in its XNNPACK
    delegate (any adj_x / adj_y, broadcast, constant or not), XNNPACK's float32 requantization
    (:func:`xnnpack_fp32`); with another RHS zero point, the reference kernel's double-rounding
    ``MultiplyByQuantizedMultiplier``; int16 (zero points 0) the int64 overload, which rounds
    the multiplier to 16 bits first (:func:`_rescale_int64`).
    """
    out = ctx.output(0)
    real, zl, zr, zo = quantized_rescale(node, ctx)
    mult, shift = quantize_multiplier(real)
    lo, hi = QRANGE[out.dtype]
    if xnnpack_fp32(ctx, zr):
        rescale = Fp32Requantizer(out.shape, batch_matmul_scale(ctx), zo, lo, hi)
    else:
        rescale = Requantizer(out.shape, np.array([mult]), np.array([shift]), zo, lo, hi, int64=out.dtype == np.int16)
    lhs = np.empty(av.shape, np.float64)
    rhs = np.empty(bv.shape, np.float64)
    acc64 = np.empty(out.shape, np.float64)
    acc = np.empty(out.shape, np.int64)
    const_rhs = ctx.const(1) is not None
    if const_rhs:
        np.subtract(bv, zr, out=rhs, dtype=np.float64)

    def run() -> None:
        np.subtract(av, zl, out=lhs, dtype=np.float64)
        if not const_rhs:
            np.subtract(bv, zr, out=rhs, dtype=np.float64)
        np.matmul(lhs, rhs, out=acc64)
        np.copyto(acc, acc64, casting="unsafe")
        rescale(acc, out)
    return run

