"""CONV_2D, float: one GEMM per chunk of output rows.

Weights OHWI are reshaped once to a (KH*KW*I, O) matrix. A 1x1 stride-1 conv is a single
matmul on the input viewed as (pixels, I). Anything else gathers patches (im2col) from a
padded copy of the input into a preallocated, cache-sized scratch matrix and multiplies
it chunk by chunk, so the scratch stays in L2 while BLAS reads it. Quantized convs are in
quantized_conv.py.
"""

from __future__ import annotations

import numpy as np

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


def gemm_plan(win: Window, x: np.ndarray, fill, dtype=None) -> tuple[PaddedInput, list, np.ndarray | None]:
    """How to feed the GEMM: ``(padded input, chunks, direct matrix)``.

    A 1x1 stride-1 unpadded conv needs no im2col: the direct matrix is the (widened, if
    ``dtype`` differs from the input's) input viewed as (pixels, C) and there are no chunks.
    Otherwise each chunk is ``(n, r0, r1, src, dst, cols)``: batch ``n``'s output rows
    r0..r1, the strided patches view ``src``, its shaped destination ``dst`` and the scratch
    matrix ``cols`` (rows*OW, KH*KW*C) that ``dst`` views.
    """
    pad = PaddedInput(x, win, fill, dtype)
    if win.kh == win.kw == 1 and win.sh == win.sw == 1 and not win.padded:
        return pad, [], pad.buf.reshape(-1, win.c)
    k = win.kh * win.kw * win.c
    spans = row_chunks(win.oh, win.ow * k, IM2COL_BUDGET)
    scratch = np.empty(((spans[0][1] - spans[0][0]) * win.ow, k), pad.buf.dtype)
    chunks = []
    for n in range(win.n):
        for r0, r1 in spans:
            cols = scratch[: (r1 - r0) * win.ow]
            dst = cols.reshape(r1 - r0, win.ow, win.kh, win.kw, win.c)
            chunks.append((n, r0, r1, patches_view(pad.buf, win, n, r0, r1), dst, cols))
    return pad, chunks, None


def run_gemm(pad: PaddedInput, chunks: list, direct: np.ndarray | None, wt: np.ndarray,
             outs: list[np.ndarray]) -> None:
    """``im2col @ wt`` into ``outs`` (one 2-D output view per chunk, or one for direct)."""
    pad.refresh()
    if direct is not None:
        np.matmul(direct, wt, out=outs[0])
        return
    for (_, _, _, src, dst, cols), o in zip(chunks, outs):
        np.copyto(dst, src)
        np.matmul(cols, wt, out=o)


def chunk_outputs(out: np.ndarray, chunks: list) -> list[np.ndarray]:
    """The 2-D (pixels, O) output view each chunk writes (one view when there are no chunks)."""
    o = out.shape[-1]
    if not chunks:
        return [out.reshape(-1, o)]
    return [out[n, r0:r1].reshape(-1, o) for n, r0, r1, *_ in chunks]


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
    act = clamp_activation(node)
    pad, chunks, direct = gemm_plan(win, x, 0.0)
    outs = chunk_outputs(out, chunks)
    out2 = out.reshape(-1, o)

    def run() -> None:
        if wconst is None:
            np.copyto(wt, w.reshape(o, -1).T)
        run_gemm(pad, chunks, direct, wt, outs)
        if bias is not None:
            np.add(out2, bias, out=out2)
        if act:
            act(out2)
    return run
