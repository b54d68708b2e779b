"""TRANSPOSE_CONV, float: one GEMM, then a col2im scatter-add per filter tap.

Inputs are (output_shape, weights OHWI, input, optional bias). Each input pixel times
the weights gives a (KH, KW, O) block (one matmul for all pixels); tap (i, j) of every
block lands at ``(y*stride + i, x*stride + j)`` of a full-size accumulator, which is a
strided view, so the scatter is KH*KW in-place adds. The output is the accumulator's
window offset by TFLite's padding, which is computed from the *output* size as
``transpose_conv.cc`` does. :func:`make_transpose_conv` is reusable by custom ops with
the same math (MediaPipe's ``Convolution2DTransposeBias``).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.kernels.hybrid import ImageQuantizer, filter_scales
from gpulite.backends.cpu.kernels.quantized_conv import epilogue, transpose_conv_requantizer
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.shape_rules.conv import out_size, pad_before_after
from gpulite.model.opdefs import Op


def transpose_padding(padding: int, oh: int, ow: int, kh: int, kw: int, sh: int, sw: int) -> tuple[int, int]:
    """(top, left) padding of a transpose conv with output (oh, ow), as TFLite computes it."""
    pt = pad_before_after(oh, kh, sh, 1, out_size(padding, oh, kh, sh))[0]
    pl = pad_before_after(ow, kw, sw, 1, out_size(padding, ow, kw, sw))[0]
    return pt, pl


def scatter_gemm(x: np.ndarray, w: np.ndarray, out: np.ndarray, sh: int, sw: int, pad_t: int, pad_l: int,
                 dtype=np.float32):
    """The closure writing the transpose conv of ``x`` by the constant OHWI ``w`` (no bias) into
    ``out``, computing in ``dtype`` (float64 keeps integer products and sums exact)."""
    n, h, wd, ci = x.shape
    o, kh, kw, _ = w.shape
    oh, ow = out.shape[1:3]
    wt = np.ascontiguousarray(np.asarray(w).transpose(3, 1, 2, 0).reshape(ci, kh * kw * o), dtype)
    cols = np.empty((n, h, wd, kh, kw, o), dtype)
    cols2 = cols.reshape(n * h * wd, kh * kw * o)
    x2 = x.reshape(-1, ci)
    xw = x2 if x2.dtype == dtype else np.empty(x2.shape, dtype)
    full = np.zeros((n, max((h - 1) * sh + kh, pad_t + oh), max((wd - 1) * sw + kw, pad_l + ow), o), dtype)
    taps = [(full[:, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw, :], cols[:, :, :, i, j, :])
            for i in range(kh) for j in range(kw)]
    window = full[:, pad_t:pad_t + oh, pad_l:pad_l + ow, :]

    def run() -> None:
        if xw is not x2:
            np.copyto(xw, x2)
        np.matmul(xw, wt, out=cols2)
        full.fill(0.0)
        for dst, src in taps:
            np.add(dst, src, out=dst)
        np.copyto(out, window, casting="same_kind")
    return run


def make_transpose_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray,
                        sh: int, sw: int, pad_t: int, pad_l: int, act=None):
    """The run closure of a float transpose conv; ``w`` is constant OHWI, arrays NHWC."""
    gemm = scatter_gemm(x, w, out, sh, sw, pad_t, pad_l)

    def run() -> None:
        gemm()
        if bias is not None:
            np.add(out, bias, out=out)
        if act:
            act(out)
    return run


@register_kernel(Op.TRANSPOSE_CONV, "cpu")
def transpose_conv(node, ctx):
    """TRANSPOSE_CONV: float32, hybrid (float input, int8 filter), int8, uint8 or 16x8 (int16
    input and output, int8 filter)."""
    shape_c, w, x, out = ctx.const(0), ctx.input(1), ctx.input(2), ctx.output(0)
    kind = ("float" if x.dtype == w.dtype == out.dtype == np.float32 else
            "hybrid" if x.dtype == out.dtype == np.float32 and w.dtype == np.int8 else
            "int8" if x.dtype == w.dtype == out.dtype and x.dtype in (np.int8, np.uint8) else
            "int8" if x.dtype == out.dtype == np.int16 and w.dtype == np.int8 else None)
    if kind is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float32, hybrid (int8 weights), int8, uint8 and "
                                 f"16x8 (int16 with int8 weights) are supported, got input {x.dtype}, weights "
                                 f"{w.dtype}, output {out.dtype}")
    if ctx.const(1) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "needs constant weights")
    if x.ndim != 4 or w.ndim != 4 or out.ndim != 4 or w.shape[3] != x.shape[3] or w.shape[0] != out.shape[3]:
        raise ShapeError(f"node {node.index} (TRANSPOSE_CONV): input {list(x.shape)}, weights OHWI "
                         f"{list(w.shape)} and output {list(out.shape)} do not fit together")
    if shape_c is not None and tuple(int(d) for d in np.ravel(shape_c)) != out.shape:
        raise ShapeError(f"node {node.index} (TRANSPOSE_CONV): output_shape {np.ravel(shape_c).tolist()} "
                         f"differs from the output tensor's {list(out.shape)}")
    opts = node.options
    sh, sw = int(opts.stride_h), int(opts.stride_w)
    pt, pl = transpose_padding(opts.padding, out.shape[1], out.shape[2], w.shape[1], w.shape[2], sh, sw)
    if ctx.has_input(3) and ctx.const(3) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "needs a constant bias")
    if kind == "int8":
        return _int8(node, ctx, sh, sw, pt, pl)
    bias = np.asarray(ctx.const(3), np.float32).reshape(-1) if ctx.has_input(3) else None
    if kind == "hybrid":
        return _hybrid(node, ctx, bias, sh, sw, pt, pl)
    return make_transpose_conv(x, ctx.const(1), bias, out, sh, sw, pt, pl, clamp_fn(node.activation))


def _int8(node, ctx, sh: int, sw: int, pt: int, pl: int):
    """int8, uint8 (and 16x8) TRANSPOSE_CONV: the exact sums of ``(x - zp_in) * (w - zp_w)`` over
    the taps, plus the int32/int64 bias, rescaled per output channel as default LiteRT does:
    XNNPACK's float32 requantization where its delegate takes the op, else its builtin kernel's
    (:func:`transpose_conv_requantizer`)."""
    x, w, out = ctx.input(2), ctx.const(1), ctx.output(0)
    rq, zp_w, zp_in = transpose_conv_requantizer(node, ctx, w.shape[0], out.shape)
    if x.dtype != np.uint8 and np.any(zp_w != 0):
        raise UnsupportedOpError(node.op, node.index, "cpu", "int8 filter zero points must be 0")
    centered = np.empty(x.shape, np.float64)
    acc64 = np.empty(out.shape, np.float64)
    gemm = scatter_gemm(centered, w.astype(np.float64) - zp_w.reshape(-1, 1, 1, 1), acc64, sh, sw, pt, pl,
                        np.float64)
    finish = epilogue(ctx, acc64, np.zeros(1, np.int64), rq, out, bias_index=3)

    def run() -> None:
        np.subtract(x, zp_in, out=centered, dtype=np.float64)
        gemm()
        finish()
    return run


def _hybrid(node, ctx, bias, sh: int, sw: int, pt: int, pl: int):
    """Hybrid TRANSPOSE_CONV: the input quantized per image (see :mod:`.hybrid`), exact integer
    sums, scaled back by the image's and the output channel's scales, plus the float bias."""
    x, w, out = ctx.input(2), ctx.const(1), ctx.output(0)
    ws = filter_scales(node, ctx, w.shape[0], 0)
    quant = ImageQuantizer(x, tflite=False)
    acc = np.empty(out.shape, np.float64)
    gemm = scatter_gemm(quant.centered, w, acc, sh, sw, pt, pl, np.float64)
    out_n, out_c = out.reshape(out.shape[0], -1), out.reshape(-1, out.shape[-1])
    act = clamp_fn(node.activation)

    def run() -> None:
        quant()
        gemm()
        np.copyto(out, acc, casting="same_kind")
        np.multiply(out_n, quant.scale[:, None], out=out_n)
        np.multiply(out_c, ws, out=out_c)
        if bias is not None:
            np.add(out_c, bias, out=out_c)
        if act:
            act(out)
    return run
