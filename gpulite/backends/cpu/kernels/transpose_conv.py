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
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.shape_rules.conv import out_size, pad_before_after
from gpulite.model.opdefs import Op


def transpose_padding(padding: int, oh: int, ow: int, kh: int, kw: int, sh: int, sw: int) -> tuple[int, int]:
    """(top, left) padding of a transpose conv with output (oh, ow), as TFLite computes it."""
    pt = pad_before_after(oh, kh, sh, 1, out_size(padding, oh, kh, sh))[0]
    pl = pad_before_after(ow, kw, sw, 1, out_size(padding, ow, kw, sw))[0]
    return pt, pl


def make_transpose_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray,
                        sh: int, sw: int, pad_t: int, pad_l: int, act=None):
    """The run closure of a float transpose conv; ``w`` is constant OHWI, arrays NHWC."""
    n, h, wd, ci = x.shape
    o, kh, kw, _ = w.shape
    oh, ow = out.shape[1:3]
    wt = np.ascontiguousarray(w.transpose(3, 1, 2, 0).reshape(ci, kh * kw * o), np.float32)
    cols = np.empty((n, h, wd, kh, kw, o), np.float32)
    cols2 = cols.reshape(n * h * wd, kh * kw * o)
    x2 = x.reshape(-1, ci)
    full = np.zeros((n, max((h - 1) * sh + kh, pad_t + oh), max((wd - 1) * sw + kw, pad_l + ow), o), np.float32)
    taps = [(full[:, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw, :], cols[:, :, :, i, j, :])
            for i in range(kh) for j in range(kw)]
    window = full[:, pad_t:pad_t + oh, pad_l:pad_l + ow, :]

    def run() -> None:
        np.matmul(x2, wt, out=cols2)
        full.fill(0.0)
        for dst, src in taps:
            np.add(dst, src, out=dst)
        if bias is not None:
            np.add(window, bias, out=out)
        else:
            np.copyto(out, window)
        if act:
            act(out)
    return run


@register_kernel(Op.TRANSPOSE_CONV, "cpu")
def transpose_conv(node, ctx):
    shape_c, w, x, out = ctx.const(0), ctx.input(1), ctx.input(2), ctx.output(0)
    if not (x.dtype == w.dtype == out.dtype == np.float32):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"only float32 is supported, got input {x.dtype}, "
                                 f"weights {w.dtype}, output {out.dtype}")
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
    bias = None
    if ctx.has_input(3):
        if ctx.const(3) is None:
            raise UnsupportedOpError(node.op, node.index, "cpu", "needs a constant bias")
        bias = np.asarray(ctx.const(3), np.float32).reshape(-1)
    return make_transpose_conv(x, ctx.const(1), bias, out, sh, sw, pt, pl, clamp_fn(node.activation))
