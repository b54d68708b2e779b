"""SOFTMAX over the last axis: float32, and int8/uint8 as LiteRT's optimized kernel does it.

Float: ``exp(beta * (x - max)) / sum``, the max subtracted first so exp never overflows.

Quantized (``optimized_ops::Softmax`` with ``PopulateSoftmaxLookupTable``): a 256-entry
float table ``exp(-input_scale * beta * d)`` for d = max - x, a float32 sum accumulated
left to right, ``p = table * (1 / (sum * output_scale))``, then int8 (and the int16 output an
8-bit input may have) ``round(p) + zp`` and uint8 ``int(p + 0.5f)`` (LiteRT's non-ARM uint8 path,
which ignores the zero point). int16
(the 16x8 mode): :func:`.quantized_int16.softmax_int16`. int8/uint8 LOG_SOFTMAX:
:func:`quantized_log_softmax` (the float LOG_SOFTMAX is math_ops.py's).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import is_quantized
from gpulite.backends.cpu.kernels.quantized_int16 import softmax_int16
from gpulite.backends.cpu.quant import QRANGE
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

Run = Callable[[], None]


def _float_softmax(x: np.ndarray, out: np.ndarray, beta: float) -> Run:
    row = np.empty((*x.shape[:-1], 1), np.float32)
    beta32 = np.float32(beta)

    def run() -> None:
        np.maximum.reduce(x, axis=-1, keepdims=True, out=row)
        np.subtract(x, row, out=out)
        if beta32 != 1:
            np.multiply(out, beta32, out=out)
        np.exp(out, out=out)
        np.add.reduce(out, axis=-1, keepdims=True, out=row)
        np.divide(out, row, out=out)
    return run


def _quantized_softmax(node: Node, ctx, beta: float) -> Run:
    ii, io = ctx.in_info(0), ctx.out_info(0)
    if io.dtype not in (ii.dtype, np.dtype(np.int16)):
        raise UnsupportedOpError(Op.SOFTMAX, node.index, "cpu",
                                 f"{ii.dtype} input needs a {ii.dtype} or int16 output, got {io.dtype}")
    for t in (ii, io):
        if t.quant is None or t.quant.scale.size != 1:
            raise UnsupportedOpError(Op.SOFTMAX, node.index, "cpu", f"tensor {t.index} needs per-tensor quantization")
    x, out = ctx.input(0), ctx.output(0)
    in_scale, out_scale = np.float32(ii.quant.scale[0]), np.float32(io.quant.scale[0])
    zp = int(io.quant.zero_point[0])
    table = softmax_table(in_scale, beta)

    rows = (*x.shape[:-1], 1)
    mx, inv = np.empty(rows, np.intp), np.empty(rows, np.float32)
    idx = np.empty(x.shape, np.intp)
    e, acc, t = (np.empty(x.shape, np.float32) for _ in range(3))
    total = acc[..., -1:]
    qmin, qmax = QRANGE[io.dtype]
    signed = io.dtype != np.uint8  # int8 and int16 outputs: std::round

    def run() -> None:
        _row_exps(x, table, mx, idx, e, acc)
        np.multiply(total, out_scale, out=inv)
        np.divide(np.float32(1), inv, out=inv)
        np.multiply(e, inv, out=e)
        if signed:  # std::round: p >= 0, so add 1 where the fraction is >= 0.5 (exact in float32)
            np.trunc(e, out=t)
            np.subtract(e, t, out=e)
            np.multiply(e, 2, out=e)
            np.trunc(e, out=e)
            np.add(t, e, out=t)
            np.add(t, zp, out=t)
        else:
            np.add(e, np.float32(0.5), out=t)
            np.trunc(t, out=t)
        np.clip(t, qmin, qmax, out=t)
        np.copyto(out, t, casting="unsafe")
    return run


def _row_exps(x: np.ndarray, table: np.ndarray, mx: np.ndarray, idx: np.ndarray, e: np.ndarray,
              acc: np.ndarray) -> None:
    """Into ``mx`` each row's max code, into ``e`` the table's ``exp`` of each code's distance
    below it, into ``acc`` their running float32 sums (the last column a row's total)."""
    np.maximum.reduce(x, axis=-1, keepdims=True, out=mx)
    np.subtract(x, mx, out=idx)
    np.add(idx, 255, out=idx)
    np.take(table, idx, out=e, mode="clip")
    np.cumsum(e, axis=-1, out=acc)  # sequential float32 sum, as the C++ loop adds


def softmax_table(in_scale: np.float32, beta: float) -> np.ndarray:
    """``PopulateSoftmaxLookupTable``: ``table[255 - d] = expf(-input_scale * beta * d)``, float32."""
    d = np.arange(256, dtype=np.float32)
    coef = np.float32(-in_scale * np.float32(beta))
    table = np.empty(256, np.float32)
    table[255 - np.arange(256)] = np.exp((coef * d).astype(np.float64)).astype(np.float32)
    return table


def quantized_log_softmax(node: Node, ctx) -> Run:
    """int8/uint8 LOG_SOFTMAX as LiteRT's optimized kernel (``optimized_ops::LogSoftmax``): the
    softmax table summed left to right in float32 from the row's max code, ``logf`` of the sum,
    then ``rint(s_in / s_out * x - (s_in * max + log_sum) / s_out) + zp`` in float32, clamped.
    LiteRT requires the output scale 16/256 and zero point 127 (int8) or 255 (uint8)."""
    ii, io = ctx.in_info(0), ctx.out_info(0)
    want_zp = 127 if ii.dtype == np.int8 else 255
    if io.dtype != ii.dtype or io.quant is None or io.quant.scale.size != 1 or ii.quant.scale.size != 1:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{ii.dtype} input needs a per-tensor quantized "
                                 f"{ii.dtype} output, got {io.dtype}")
    in_scale, out_scale = np.float32(ii.quant.scale[0]), np.float32(io.quant.scale[0])
    zp = int(io.quant.zero_point[0])
    if out_scale != np.float32(16 / 256) or zp != want_zp:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{ii.dtype} LOG_SOFTMAX needs output scale 16/256 and "
                                 f"zero point {want_zp} (as LiteRT), got {out_scale} and {zp}")
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape or x.ndim < 1:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(x.shape)} but output {list(out.shape)}")
    table = softmax_table(in_scale, 1.0)
    ratio = np.float32(in_scale / out_scale)
    rows = (*x.shape[:-1], 1)
    mx = np.empty(rows, np.intp)
    idx = np.empty(x.shape, np.intp)
    e, acc = np.empty(x.shape, np.float32), np.empty(x.shape, np.float32)
    qmin, qmax = QRANGE[io.dtype]

    def run() -> None:
        _row_exps(x, table, mx, idx, e, acc)
        log_sum = np.log(acc[..., -1:].astype(np.float64)).astype(np.float32)  # logf, rounded once
        pre = ((in_scale * mx.astype(np.float32)).astype(np.float32) + log_sum) / out_scale
        log_prob = (ratio * x.astype(np.float32)).astype(np.float32) - pre.astype(np.float32)
        np.copyto(out, np.clip(np.rint(log_prob) + zp, qmin, qmax), casting="unsafe")
    return run


@register_kernel(Op.SOFTMAX, "cpu")
def softmax(node: Node, ctx) -> Run:
    """SOFTMAX along the last axis with ``beta`` from SoftmaxOptions (float32, int8, uint8, int16)."""
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape or x.ndim < 1:
        raise ShapeError(f"node {node.index} (SOFTMAX): input {list(x.shape)} but output {list(out.shape)}")
    beta = float(getattr(node.options, "beta", 0.0))
    if is_quantized(ctx.in_info(0)):
        return _quantized_softmax(node, ctx, beta)
    if ctx.in_info(0).dtype == np.int16 and ctx.in_info(0).quant is not None:
        return softmax_int16(node, ctx, beta)
    if ctx.in_info(0).dtype != np.float32 or ctx.out_info(0).dtype != np.float32:
        got = f"{ctx.in_info(0).dtype} -> {ctx.out_info(0).dtype}"
        raise UnsupportedOpError(Op.SOFTMAX, node.index, "cpu", f"float32, 8- or 16-bit quantized only, got {got}")
    return _float_softmax(x, out, beta)
