"""CONV_2D, float: one GEMM per chunk of output rows.

Weights OHWI are reshaped once to a (KH*KW*I, O) matrix. A 1x1 stride-1 conv is a single
matmul on the input viewed as (pixels, I). Anything else gathers patches (im2col) from a
padded copy of the input into a preallocated, cache-sized scratch matrix and multiplies
it chunk by chunk, so the scratch stays in L2 while BLAS reads it. Quantized convs are in
quantized_conv.py.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.activation import activation_fn
from gpulite.backends.cpu.window import PaddedInput, Window, patches_view, row_chunks, window
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


def gemm_plan(win: Window, x: np.ndarray, fill) -> tuple[PaddedInput | None, list]:
    """How to feed the GEMM: None for a direct 1x1 matmul, else the padded input and chunks.

    Each chunk is ``(n, r0, r1, src, cols)``: batch ``n``'s output rows r0..r1, the strided
    patches view ``src`` and the scratch view ``cols`` (rows*OW, KH*KW*C) it is copied to.
    """
    if win.kh == win.kw == 1 and win.sh == win.sw == 1 and not win.padded:
        return None, []
    pad = PaddedInput(x, win, fill)
    k = win.kh * win.kw * win.c
    spans = row_chunks(win.oh, win.ow * k, IM2COL_BUDGET)
    scratch = np.empty(((spans[0][1] - spans[0][0]) * win.ow, k), x.dtype)
    chunks = []
    for n in range(win.n):
        for r0, r1 in spans:
            cols = scratch[: (r1 - r0) * win.ow]
            dst = cols.reshape(r1 - r0, win.ow, win.kh, win.kw, win.c)
            chunks.append((n, r0, r1, patches_view(pad.buf, win, n, r0, r1), dst, cols))
    return pad, chunks


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
    wt = np.empty((kh * kw * ci, o), np.float32)  # row order (kh, kw, ci) matches the patches
    if wconst is not None:
        np.copyto(wt, wconst.reshape(o, -1).T)
    bias = ctx.input(2).reshape(o) if ctx.has_input(2) else None
    act = activation_fn(node.activation)
    pad, chunks = gemm_plan(win, x, 0.0)
    out2 = out.reshape(-1, o)
    outs = [out[n, r0:r1].reshape(-1, o) for n, r0, r1, *_ in chunks]
    x2 = x.reshape(-1, ci)

    def run() -> None:
        if wconst is None:
            np.copyto(wt, w.reshape(o, -1).T)
        if pad is None:
            np.matmul(x2, wt, out=out2)
        else:
            pad.refresh()
            for (_, _, _, src, dst, cols), dst_out in zip(chunks, outs):
                np.copyto(dst, src)
                np.matmul(cols, wt, out=dst_out)
        if bias is not None:
            np.add(out2, bias, out=out2)
        if act:
            act(out2)
    return run
