"""DEPTHWISE_CONV_2D, float: multiply-accumulate one filter tap at a time on flat slices.

numpy is about twice as fast on one contiguous run as on rows with gaps, so every tap is
made a *contiguous* slice (see :class:`PhaseInput`): the padded input is split into its
stride phases (one for stride 1), each laid out with a common row width ``Wq``; output
pixel (y, x) of tap (i, j) then reads phase pixel ``(y*Wq + x) + offset(i, j)``, so a tap
over a run of output rows is one flat slice. The ``Wq - OW`` extra columns per row are
computed and dropped. Each tap is two ufunc passes (multiply into scratch, add into the
accumulator) over chunks of rows sized to stay in cache, viewed as (rows, T*C) against the
tap's weights tiled T times: a long inner loop without a large tiled weight array. Bias,
activation and the copy of the valid columns into the output happen per chunk, while hot.
Quantized depthwise (quantized_conv.py) runs the same plan in float64.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.window import Window, clamp_activation, window
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError

CHUNK_BUDGET = 1 << 14  # accumulator elements per chunk: acc + scratch stay in L1/L2
PERIOD = 256  # minimum inner-loop length: weights are tiled to ceil(PERIOD / C) pixels


def depthwise_geometry(node, x_shape, w_shape, out_shape) -> tuple[Window, int]:
    """Window and depth multiplier of a DEPTHWISE_CONV_2D; ``ShapeError`` on a mismatch."""
    if len(w_shape) != 4 or w_shape[0] != 1:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): filter must be [1, KH, KW, C*M], got {list(w_shape)}")
    _, kh, kw, co = w_shape
    win = window(x_shape, kh, kw, node.options, out_shape)
    if win.c == 0 or co % win.c:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): {co} output channels is not a multiple "
                         f"of the input's {win.c}")
    if out_shape[3] != co:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): output should have {co} channels, "
                         f"the model says {list(out_shape)}")
    return win, co // win.c


def _phase_copy(size: int, pad: int, phase: int, stride: int, length: int) -> tuple[slice, slice] | None:
    """(destination, source) slices along one axis filling phase ``phase`` from the input."""
    u0 = max(0, -((phase - pad) // stride))  # first u with u*stride + phase - pad >= 0
    u1 = min(length, (size - 1 + pad - phase) // stride + 1)
    if u1 <= u0:
        return None
    start = u0 * stride + phase - pad
    return slice(u0, u1), slice(start, start + (u1 - u0 - 1) * stride + 1, stride)


class PhaseInput:
    """The input split into stride phases, padded, channels repeated M times, flat rows of ``wq``.

    ``buf[p, n]`` is phase ``p`` of image ``n`` as (rows, wq, C*M); its border keeps ``fill``
    (written once). :meth:`refresh` copies the current input in (one strided pass).
    ``taps`` lists per filter tap (i, j) its phase and flat pixel offset.
    """

    def __init__(self, x: np.ndarray, win: Window, mult: int, fill, dtype, period: int) -> None:
        self.x, self.mult = x, mult
        oh_max, ow_max = ((win.kh - 1) * win.dh) // win.sh, ((win.kw - 1) * win.dw) // win.sw
        self.wq = -(-(win.ow + ow_max) // period) * period
        rows = win.oh + oh_max + 1  # one spare row: the last tap's slice runs past its last row
        phases = sorted({((i * win.dh) % win.sh, (j * win.dw) % win.sw) for i in range(win.kh) for j in range(win.kw)})
        self.buf = np.full((len(phases), win.n, rows, self.wq, win.c * mult), fill, dtype)
        self.taps = [(phases.index(((i * win.dh) % win.sh, (j * win.dw) % win.sw)),
                      ((i * win.dh) // win.sh) * self.wq + (j * win.dw) // win.sw)
                     for i in range(win.kh) for j in range(win.kw)]
        self.copies = []
        for p, (ph, pw) in enumerate(phases):
            r = _phase_copy(win.h, win.pad_t, ph, win.sh, rows)
            c = _phase_copy(win.w, win.pad_l, pw, win.sw, self.wq)
            if r is not None and c is not None:
                dst = self.buf[p, :, r[0], c[0], :]
                if mult > 1:  # each input channel feeds M outputs: repeat it while copying
                    dst = dst.reshape(dst.shape[:3] + (win.c, mult))
                src = x[(slice(None), r[1], c[1], slice(None)) + ((None,) if mult > 1 else ())]
                self.copies.append((dst, src))

    def refresh(self) -> None:
        for dst, src in self.copies:
            np.copyto(dst, src)


def tap_plan(win: Window, phased: PhaseInput, out: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
             period: int) -> list:
    """Per chunk: (acc, tmp, [(tap slice, tiled weights)], tiled bias, output view, valid acc view).

    ``w`` is (KH, KW, C*M). Slices and scratch are (rows*wq/period, period*C*M) 2-D views.
    """
    co, wq = out.shape[3], phased.wq
    rows = max(1, CHUNK_BUDGET // (wq * co))
    acc_buf = np.empty(rows * wq * co, out.dtype)
    tmp_buf = np.empty_like(acc_buf)
    wts = [np.tile(w[i, j], period) for i in range(win.kh) for j in range(win.kw)]
    b = None if bias is None else np.tile(bias, period).astype(out.dtype)
    flat = phased.buf.reshape(phased.buf.shape[0], win.n, -1)
    plan = []
    for n in range(win.n):
        for y0 in range(0, win.oh, rows):
            y1 = min(win.oh, y0 + rows)
            size = (y1 - y0) * wq * co
            shape = (size // (period * co), period * co)
            acc, tmp = acc_buf[:size].reshape(shape), tmp_buf[:size].reshape(shape)
            taps = []
            for (p, off), wt in zip(phased.taps, wts):
                start = (y0 * wq + off) * co
                taps.append((flat[p, n, start:start + size].reshape(shape), wt))
            valid = acc_buf[:size].reshape(y1 - y0, wq, co)[:, : win.ow, :]
            plan.append((acc, tmp, taps, b, out[n, y0:y1], valid))
    return plan


def accumulate(plan: list, act=None) -> None:
    """Run a :func:`tap_plan`: sum the taps per chunk, add bias, activate, store the valid part."""
    for acc, tmp, taps, b, dst, valid in plan:
        (v0, w0), rest = taps[0], taps[1:]
        np.multiply(v0, w0, out=acc)
        for v, wt in rest:
            np.multiply(v, wt, out=tmp)
            np.add(acc, tmp, out=acc)
        if b is not None:
            np.add(acc, b, out=acc)
        if act:
            act(acc)
        np.copyto(dst, valid)


def depthwise_plan(win: Window, x: np.ndarray, out: np.ndarray, mult: int, w: np.ndarray,
                   bias: np.ndarray | None, fill, dtype) -> tuple[PhaseInput, list]:
    """The phase buffers and chunk plan of a depthwise conv computing in ``dtype``."""
    co = win.c * mult
    period = -(-PERIOD // co)
    phased = PhaseInput(x, win, mult, fill, dtype, period)
    return phased, tap_plan(win, phased, out, w.astype(dtype), bias, period)


@register_kernel("DEPTHWISE_CONV_2D", "cpu")
def depthwise_conv_2d(node, ctx):
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if x.dtype != np.float32:
        from gpulite.backends.cpu.kernels.quantized_conv import quantized_depthwise_conv_2d
        return quantized_depthwise_conv_2d(node, ctx)
    if ctx.const(1) is None or w.dtype != np.float32:
        what = "a non-constant filter" if ctx.const(1) is None else f"a {w.dtype} filter"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"needs a constant float32 filter, got {what}")
    win, mult = depthwise_geometry(node, x.shape, w.shape, out.shape)
    co = w.shape[3]
    if ctx.has_input(2) and ctx.const(2) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "needs a constant bias")
    bias = np.asarray(ctx.const(2), np.float32).reshape(co) if ctx.has_input(2) else None
    phased, plan = depthwise_plan(win, x, out, mult, np.asarray(w)[0], bias, 0.0, np.float32)
    act = clamp_activation(node)

    def run() -> None:
        phased.refresh()
        accumulate(plan, act)
    return run
