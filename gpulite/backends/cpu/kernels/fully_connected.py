"""FULLY_CONNECTED: float, hybrid (float input, int8 weights: :mod:`.hybrid`), and int8/uint8
with per-tensor or per-channel int8 weights.

TFLite flattens every leading input dimension into rows of ``in`` features (weights are
``[out, in]``); ``keep_num_dims`` only changes the output's stored shape, which the
output array already has, so both cases are one (rows, in) @ (in, out) matmul. The
quantized path computes the integer accumulator exactly in float64 like
quantized_conv.py and rescales it as default LiteRT does (:func:`fc_rescale`): XNNPACK's float32
requantization where its delegate takes the op, else ruy's rounding (LiteRT's optimized builtin
kernel); the 16x8 op (which XNNPACK declines) with TFLite's fixed-point multiplier, rounding once
(see :mod:`gpulite.backends.cpu.quant`).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.kernels.hybrid import hybrid_fully_connected
from gpulite.backends.cpu.kernels.quantized_conv import default_rescaler, epilogue, requantizer, rescale_factors
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.model.opdefs import Op


def _rows(node, x: np.ndarray, w: np.ndarray, out: np.ndarray) -> tuple[int, int, int]:
    if w.ndim != 2:
        raise ShapeError(f"node {node.index} (FULLY_CONNECTED): weights must be 2-D [out, in], got {list(w.shape)}")
    units, depth = w.shape
    if depth == 0 or x.size % depth or out.size != (x.size // depth) * units:
        raise ShapeError(f"node {node.index} (FULLY_CONNECTED): input {list(x.shape)} in rows of {depth} "
                         f"times weights {list(w.shape)} cannot fill output {list(out.shape)}")
    return x.size // depth, depth, units


@register_kernel(Op.FULLY_CONNECTED, "cpu")
def fully_connected(node, ctx):
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if getattr(node.options, "weights_format", 0) != 0:
        raise UnsupportedOpError(node.op, node.index, "cpu", "only the DEFAULT weights format is supported")
    rows, depth, units = _rows(node, x, w, out)
    if node.activation and node.activation.clamp is None:
        # fully_connected.cc checks this at Prepare; LiteRT refuses such a model too.
        raise UnsupportedOpError(node.op, node.index, "cpu", f"fused activation must be NONE, RELU, RELU6 "
                                 f"or RELU_N1_TO_1, got {node.activation}")
    if x.dtype != np.float32:
        return _quantized(node, ctx, rows, depth, units)
    if w.dtype == np.int8 and out.dtype == np.float32:
        return hybrid_fully_connected(node, ctx, rows, depth, units)
    if w.dtype != np.float32 or out.dtype != np.float32:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float input needs float32 or int8 weights and "
                                 f"a float32 output, got {w.dtype} -> {out.dtype}")
    x2, out2 = x.reshape(rows, depth), out.reshape(rows, units)
    wconst = ctx.const(1)
    # A contiguous (in, out) copy made once; a weight computed at run time is read transposed.
    wt = np.ascontiguousarray(wconst.T) if wconst is not None else w.T
    bias = ctx.input(2).reshape(units) if ctx.has_input(2) else None
    act = clamp_fn(node.activation)

    def run() -> None:
        np.matmul(x2, wt, out=out2)
        if bias is not None:
            np.add(out2, bias, out=out2)
        if act:
            act(out2)
    return run


def fc_rescale(node, ctx) -> str:
    """How default LiteRT rescales this 8-bit FULLY_CONNECTED: ``"fp32"``, XNNPACK's float32
    requantization, where its delegate takes the op (int8 weights with zero points 0, or uint8
    ones quantized along dimension 0; a constant bias or none: measured with ai-edge-litert 2.3,
    which declines a bias fed at run time, an int8 weight zero point or a uint8 weight's other
    quantized dimension); else ``"ruy"``, its builtin optimized kernel's (``cpu_backend_gemm``:
    ruy's rounding, halves up on every channel)."""
    w = ctx.in_info(1)
    codes = w.quant.axis == 0 if w.dtype == np.uint8 else not np.any(w.quant.zero_point)
    xnnpack = codes and (not ctx.has_input(2) or ctx.const(2) is not None)
    return "fp32" if xnnpack else "ruy"


def _quantized(node, ctx, rows: int, depth: int, units: int):
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if ctx.const(1) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "quantized fully connected needs constant weights")
    per_channel = w.dtype == np.int8 and ctx.in_info(1).quant is not None and ctx.in_info(1).quant.scale.size > 1
    # fully_connected.cc: per-tensor weights go through GetQuantizedConvolutionMultipler; 8-bit
    # codes rescaled as default LiteRT does (fc_rescale); the 16x8 op has only the reference
    # kernel, which rounds once (unlike conv)
    real, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, units, 0, float_product=not per_channel)
    rq = None if x.dtype == np.int16 else default_rescaler(fc_rescale(node, ctx), ctx, (rows, units), real, zp_out,
                                                            lo, hi)
    if rq is None:
        rq = requantizer(node, ctx, units, 0, (rows, units), float_product=not per_channel, single_rounding=True,
                         int64=False)[0]
    wq = w.astype(np.int64) - zp_w.reshape(-1, 1)
    wt = np.ascontiguousarray(wq.T, dtype=np.float64)
    corr = -zp_in * wq.sum(axis=1)
    xf = np.empty((rows, depth), np.float64)
    x2 = x.reshape(rows, depth)
    acc64 = np.empty((rows, units), np.float64)
    finish = epilogue(ctx, acc64, corr, rq, out.reshape(rows, units))

    def run() -> None:
        np.copyto(xf, x2)
        np.matmul(xf, wt, out=acc64)
        finish()
    return run
