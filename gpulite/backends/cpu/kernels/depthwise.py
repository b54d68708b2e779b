"""DEPTHWISE_CONV_2D, float: multiply-accumulate one filter tap at a time on strided views.

For stride 1 and depth multiplier 1, a tap's view of the padded input has rows whose
(OW, C) part is contiguous, so each tap is two flat ufunc passes (multiply into scratch,
add into the output) against the tap's weights pre-tiled to (OW*C,) — tiling matters: a
length-C broadcast would leave numpy an inner loop of only C elements. Work goes in
chunks of output rows sized to stay in L2. Other strides and depth multipliers use the
same loop on 4-D/5-D views. Quantized depthwise is in quantized_conv.py.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.window import PaddedInput, Window, clamp_activation, row_chunks, tap_view, window
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError

CHUNK_BUDGET = 1 << 14  # output floats per chunk: acc + scratch + taps' rows stay in L1/L2


def depthwise_geometry(node, x_shape, w_shape, out_shape) -> tuple[Window, int]:
    """Window and depth multiplier of a DEPTHWISE_CONV_2D; ``ShapeError`` on a mismatch."""
    if len(w_shape) != 4 or w_shape[0] != 1:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): filter must be [1, KH, KW, C*M], got {list(w_shape)}")
    _, kh, kw, co = w_shape
    win = window(x_shape, kh, kw, node.options, out_shape)
    if win.c == 0 or co % win.c:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): {co} output channels is not a multiple "
                         f"of the input's {win.c}")
    mult = co // win.c
    if out_shape[3] != co:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): output should have {co} channels, "
                         f"the model says {list(out_shape)}")
    return win, mult


def tap_plan(win: Window, buf: np.ndarray, out: np.ndarray, mult: int, w: np.ndarray,
             bias: np.ndarray | None) -> list:
    """Per chunk: (output view, scratch view, [(input view, weights)] per tap, bias), aligned.

    ``w`` is (KH, KW, C*M). With M = 1 and stride 1 views are (N, rows, OW*C) and weights
    and bias tiled to (OW*C,); otherwise views are (N, rows, OW, C, 1) against (C, M).
    """
    co = win.c * mult
    flat = mult == 1 and win.sw == 1
    spans = row_chunks(win.oh, win.ow * co * win.n, CHUNK_BUDGET)
    scratch = np.empty((win.n, spans[0][1] - spans[0][0], win.ow, co), out.dtype)
    if flat:
        wts = [np.tile(w[i, j], win.ow) for i in range(win.kh) for j in range(win.kw)]
        b = None if bias is None else np.tile(bias, win.ow)
    else:
        b = None if bias is None else bias.reshape(win.c, mult)
        wts = [w[i, j].reshape(win.c, mult) for i in range(win.kh) for j in range(win.kw)]
    plan = []
    for r0, r1 in spans:
        o, t = out[:, r0:r1], scratch[:, : r1 - r0]
        taps = [tap_view(buf, win, i, j, slice(r0, r1)) for i in range(win.kh) for j in range(win.kw)]
        if flat:
            shp = (win.n, r1 - r0, win.ow * win.c)
            o, t = o.reshape(shp), t.reshape(shp)
            # Stride 1 keeps the (OW, C) part of each tap's rows contiguous, so this view is exact.
            taps = [np.lib.stride_tricks.as_strided(v, shp, v.strides[:2] + (v.strides[3],)) for v in taps]
        else:
            shp = (win.n, r1 - r0, win.ow, win.c, mult)
            o, t = o.reshape(shp), t.reshape(shp)
            taps = [v[..., None] for v in taps]
        plan.append((o, t, list(zip(taps, wts)), b))
    return plan


@register_kernel("DEPTHWISE_CONV_2D", "cpu")
def depthwise_conv_2d(node, ctx):
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if x.dtype != np.float32:
        from gpulite.backends.cpu.kernels.quantized_conv import quantized_depthwise_conv_2d
        return quantized_depthwise_conv_2d(node, ctx)
    if ctx.const(1) is None or w.dtype != np.float32:
        raise UnsupportedOpError("DEPTHWISE_CONV_2D", node.index, "cpu",
                                 f"needs a constant float32 filter, got {'non-constant ' if ctx.const(1) is None else ''}{w.dtype}")
    win, mult = depthwise_geometry(node, x.shape, w.shape, out.shape)
    pad = PaddedInput(x, win, 0.0)
    co = w.shape[3]
    if ctx.has_input(2) and ctx.const(2) is None:
        raise UnsupportedOpError("DEPTHWISE_CONV_2D", node.index, "cpu", "needs a constant bias")
    bias = np.asarray(ctx.const(2), np.float32).reshape(co) if ctx.has_input(2) else None
    plan = tap_plan(win, pad.buf, out, mult, np.asarray(w, np.float32)[0], bias)
    act = clamp_activation(node)

    def run() -> None:
        pad.refresh()
        accumulate(plan, act)
    return run


def accumulate(plan: list, act=None) -> None:
    """Run a :func:`tap_plan`: sum the taps per chunk, then bias and activation while hot."""
    for o, t, taps, b in plan:
        (v0, w0), rest = taps[0], taps[1:]
        np.multiply(v0, w0, out=o)
        for v, wt in rest:
            np.multiply(v, wt, out=t)
            np.add(o, t, out=o)
        if b is not None:
            np.add(o, b, out=o)
        if act:
            act(o)
