"""CONV_2D, float: one GEMM per chunk of output rows (:class:`ConvGemm`).

Weights OHWI are reshaped once to a (KH*KW*I, O) matrix, with the bias as an extra last
row where the patches carry a ones column. Quantized convs are in quantized_conv.py.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpulite.backends.cpu.kernels.depthwise import depthwise_plan, plan_runner
from gpulite.backends.cpu.window import PaddedInput, Window, clamp_activation, patches_view, row_chunks, window
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError

# Elements of im2col scratch per chunk: 256K floats = 1 MiB, about a core's L2.
IM2COL_BUDGET = 1 << 18


def conv_geometry(node, x_shape, w_shape, out_shape) -> tuple[Window, int]:
    """Window of a CONV_2D and its group count; ``ShapeError`` when channels do not fit."""
    if len(w_shape) != 4:
        raise ShapeError(f"node {node.index} (CONV_2D): filter must be 4-D OHWI, got {list(w_shape)}")
    o, kh, kw, ci = w_shape
    win = window(x_shape, kh, kw, node.options, out_shape)
    if ci <= 0 or win.c % ci or o % (win.c // ci):
        raise ShapeError(f"node {node.index} (CONV_2D): input has {win.c} channels; filter {list(w_shape)} "
                         f"needs a multiple of {ci} that also divides {o} output channels")
    if out_shape[3] != o or out_shape[0] != win.n:
        raise ShapeError(f"node {node.index} (CONV_2D): output should be [{win.n}, {win.oh}, {win.ow}, {o}], "
                         f"the model says {list(out_shape)}")
    return win, win.c // ci


class ConvGemm:
    """Computes a conv's ``patches @ wt`` into its output: ``gemm(wt)``.

    A 1x1 stride-1 unpadded conv multiplies the input viewed as (pixels, C) directly. Any
    other conv copies patches (im2col) from a padded copy of the input into a preallocated
    scratch, chunk by chunk of output rows so the scratch stays in cache while BLAS reads
    it. With ``augment`` the matrix gets a last column of ones (written once) so that a
    bias stored as the last row of ``wt`` is added by the GEMM itself instead of a pass
    over the output; for a direct conv that costs a copy of the input, worth it when the
    input has fewer channels than the output. ``dtype`` widens the input (quantized convs
    multiply exactly in float64), which also forces the copy.
    """

    def __init__(self, win: Window, x: np.ndarray, out: np.ndarray, fill, dtype=None,
                 augment: bool = False) -> None:
        dtype = np.dtype(dtype or x.dtype)
        k, o = win.kh * win.kw * win.c, out.shape[-1]
        self.k, self.pad, self.items = k + int(augment), None, []
        if win.kh == win.kw == 1 and win.sh == win.sw == 1 and not win.padded:
            x2, out2 = x.reshape(-1, win.c), out.reshape(-1, o)
            if not augment and dtype == x.dtype:
                self.items.append(([], x2, out2))
                return
            mat = np.ones((x2.shape[0], self.k), dtype)
            self.items.append(([(mat[:, :k], x2)], mat, out2))
            return
        self.pad = PaddedInput(x, win, fill, dtype)
        spans = row_chunks(win.oh, win.ow * self.k, IM2COL_BUDGET)
        scratch = np.ones(((spans[0][1] - spans[0][0]) * win.ow, self.k), dtype)
        item = scratch.itemsize
        for n in range(win.n):
            for r0, r1 in spans:
                cols = scratch[: (r1 - r0) * win.ow]
                # The first k columns of cols seen as (rows, OW, KH, KW, C), the patches' shape.
                dst = as_strided(cols, (r1 - r0, win.ow, win.kh, win.kw, win.c),
                                 (win.ow * self.k * item, self.k * item, win.kw * win.c * item, win.c * item, item))
                src = patches_view(self.pad.buf, win, n, r0, r1)
                self.items.append(([(dst, src)], cols, out[n, r0:r1].reshape(-1, o)))

    def __call__(self, wt: np.ndarray) -> None:
        if self.pad is not None:
            self.pad.refresh()
        for copies, a, o in self.items:
            for dst, src in copies:
                np.copyto(dst, src)
            np.matmul(a, wt, out=o)


@register_kernel("CONV_2D", "cpu")
def conv_2d(node, ctx):
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if x.dtype != np.float32:
        from gpulite.backends.cpu.kernels.quantized_conv import quantized_conv_2d
        return quantized_conv_2d(node, ctx)
    if w.dtype != np.float32:
        raise UnsupportedOpError("CONV_2D", node.index, "cpu", f"float input needs float32 filter, got {w.dtype}")
    win, groups = conv_geometry(node, x.shape, w.shape, out.shape)
    o, kh, kw, ci = w.shape
    if groups != 1:
        raise UnsupportedOpError("CONV_2D", node.index, "cpu", f"grouped conv ({groups} groups) is not supported")
    wconst = ctx.const(1)
    if o == 1 and kh * kw > 1 and wconst is not None:
        return _single_output_conv(node, ctx, win, wconst)
    k = kh * kw * ci
    bias = ctx.input(2).reshape(o) if ctx.has_input(2) else None
    direct = kh == kw == 1 and win.sh == win.sw == 1 and not win.padded
    augment = bias is not None and (not direct or ci < o)
    gemm = ConvGemm(win, x, out, 0.0, augment=augment)
    wt = np.empty((gemm.k, o), np.float32)  # rows (kh, kw, ci) match the patches; then the bias
    if wconst is not None:
        np.copyto(wt[:k], wconst.reshape(o, k).T)
    if augment and ctx.const(2) is not None:
        np.copyto(wt[k], bias)
    act = clamp_activation(node)
    out2 = out.reshape(-1, o)

    def run() -> None:
        if wconst is None:
            np.copyto(wt[:k], w.reshape(o, k).T)
        if augment and ctx.const(2) is None:
            np.copyto(wt[k], bias)
        gemm(wt)
        if bias is not None and not augment:
            np.add(out2, bias, out=out2)
        if act:
            act(out2)
    return run


def _single_output_conv(node, ctx, win: Window, w: np.ndarray):
    """A conv to one output channel (segmentation heads): depthwise taps, then a channel sum.

    im2col would copy KH*KW*C values per pixel to feed a GEMM with a single column; the
    depthwise plan sums the taps per input channel in place (einsum) and one (pixels, C) @
    (C, 1) matmul adds the channels: about half the time on pose_landmark's 256x256x8 head.
    """
    x, out = ctx.input(0), ctx.output(0)
    partial = np.empty((*out.shape[:3], win.c), np.float32)
    phased, plans = depthwise_plan(win, x, partial, 1, np.asarray(w, np.float32)[0], None, 0.0, np.float32)
    ones = np.ones((win.c, 1), np.float32)
    partial2, out2 = partial.reshape(-1, win.c), out.reshape(-1, 1)
    bias = ctx.input(2).reshape(1) if ctx.has_input(2) else None
    act = clamp_activation(node)
    taps = plan_runner(phased, plans)

    def run() -> None:
        taps()
        np.matmul(partial2, ones, out=out2)
        if bias is not None:
            np.add(out2, bias, out=out2)
        if act:
            act(out2)
    return run
