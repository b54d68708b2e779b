"""DEPTHWISE_CONV_2D, float: fused multiply-adds over the filter taps with ``einsum``.

numpy is about twice as fast on contiguous runs as on short strided ones, so the taps are
arranged to read contiguous rows (see :class:`PhaseInput`): the padded input is split into
its stride phases (one for stride 1: the padded input itself, or the input with no copy
when there is no padding), so output row y of tap (i, j) reads OW*C contiguous values of
one phase. The taps of one phase form a regular grid of offsets, hence one strided view
(taps_i, taps_j, rows, OW/T, T*C); a single ``einsum`` sums them against the taps' weights
tiled T times (T*C >= PERIOD: a long inner loop without a large tiled weight array),
writing straight into the output rows. Work goes in chunks of rows sized to stay in cache,
with bias and activation applied per chunk while hot; with ``num_threads`` > 1 big layers
deal the chunks to that many threads (numpy releases the GIL in ``einsum``). Quantized
depthwise (quantized_conv.py) runs the same plan in float64.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpulite.backends.cpu.threads import run_parallel
from gpulite.backends.cpu.window import Window, clamp_activation, window
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError

CHUNK_BUDGET = 1 << 17  # output elements per chunk (512 KiB of float32): measured best, 64K-256K
PERIOD = 2048  # minimum inner-loop length in elements (longer measured faster; caps tiled weights)
PARALLEL_MIN = 1 << 16  # output elements per thread below which a layer runs on one thread


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
    """The input split into stride phases, padded, channels repeated M times.

    ``buf[p, n]`` is phase ``p`` of image ``n`` as (rows, wq, C*M) with rows = OH + the
    largest tap row offset and wq = OW + the largest tap column offset; its border keeps
    ``fill`` (written once) and :meth:`refresh` copies the current input in. A stride-1,
    unpadded, M = 1 op in the input's dtype uses the input itself: no copy at all.
    ``groups`` lists per phase the filter taps that read it: ``(p, taps_i, taps_j,
    (row offset, col offset), (row step, col step))``.
    """

    def __init__(self, x: np.ndarray, win: Window, mult: int, fill, dtype) -> None:
        oh_max, ow_max = ((win.kh - 1) * win.dh) // win.sh, ((win.kw - 1) * win.dw) // win.sw
        rows, self.wq = win.oh + oh_max, win.ow + ow_max
        phases = sorted({((i * win.dh) % win.sh, (j * win.dw) % win.sw) for i in range(win.kh) for j in range(win.kw)})
        self.groups, self.copies = [], []
        for p, (ph, pw) in enumerate(phases):
            ii = [i for i in range(win.kh) if (i * win.dh) % win.sh == ph]
            jj = [j for j in range(win.kw) if (j * win.dw) % win.sw == pw]
            oy, ox = [i * win.dh // win.sh for i in ii], [j * win.dw // win.sw for j in jj]
            steps = (oy[1] - oy[0] if len(oy) > 1 else 0, ox[1] - ox[0] if len(ox) > 1 else 0)
            self.groups.append((p, ii, jj, (oy[0], ox[0]), steps))
        if (len(phases) == 1 and mult == 1 and not win.padded and np.dtype(dtype) == x.dtype
                and x.shape[1:3] == (rows, self.wq) and x.flags.c_contiguous):
            self.buf = x[None]  # stride 1, no padding: the taps read the input directly
            return
        self.buf = np.full((len(phases), win.n, rows, self.wq, win.c * mult), fill, dtype)
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


def _period(ow: int, co: int) -> int:
    """Pixels per weight tile: the smallest divisor T of OW with T*C >= PERIOD (else OW)."""
    return next((t for t in range(1, ow + 1) if ow % t == 0 and t * co >= PERIOD), ow)


def tap_plan(win: Window, phased: PhaseInput, out: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
             parts: int = 1) -> list[list]:
    """Chunks of output rows, dealt into ``parts`` lists (one per thread, own scratch each).

    A chunk is (output rows, scratch, [(taps view, weights)] per phase, bias). ``w`` is
    (KH, KW, C*M). Output rows and scratch are (rows, OW/T, T*C*M), a phase's taps view
    (taps_i, taps_j, rows, OW/T, T*C*M), its weights (taps_i, taps_j, T*C*M).
    """
    co, wq = out.shape[3], phased.wq
    t = _period(win.ow, co)
    length = t * co
    rows = max(1, min(CHUNK_BUDGET // (win.ow * co), -(-win.oh * win.n // parts)))
    spans = [(n, y0, min(win.oh, y0 + rows)) for n in range(win.n) for y0 in range(0, win.oh, rows)]
    parts = min(parts, len(spans))
    b = None if bias is None else np.tile(bias, t).astype(out.dtype)
    weights = [np.tile(w[np.ix_(ii, jj)], (1, 1, t)) for _, ii, jj, _, _ in phased.groups]
    item = phased.buf.itemsize
    plans = []
    for k in range(parts):
        scratch = np.empty((min(rows, win.oh), win.ow // t, length), out.dtype)
        plan = []
        for n, y0, y1 in spans[k * len(spans) // parts:(k + 1) * len(spans) // parts]:
            shape = (y1 - y0, win.ow // t, length)
            views = []
            for (p, ii, jj, (oy, ox), (sy, sx)), wt in zip(phased.groups, weights):
                base = phased.buf[p, n, y0 + oy, ox:]
                strides = (sy * wq * co * item, sx * co * item, wq * co * item, length * item, item)
                views.append((as_strided(base, (len(ii), len(jj)) + shape, strides, writeable=False), wt))
            plan.append((out[n, y0:y1].reshape(shape), scratch[: y1 - y0], views, b))
        plans.append(plan)
    return plans


def accumulate(plan: list, act=None) -> None:
    """Run a :func:`tap_plan`: per chunk, sum the taps phase by phase, add bias, activate."""
    for acc, tmp, views, b in plan:
        (v0, w0), rest = views[0], views[1:]
        np.einsum("ijyml,ijl->yml", v0, w0, out=acc)
        for v, wt in rest:
            np.einsum("ijyml,ijl->yml", v, wt, out=tmp)
            np.add(acc, tmp, out=acc)
        if b is not None:
            np.add(acc, b, out=acc)
        if act:
            act(acc)


def depthwise_plan(win: Window, x: np.ndarray, out: np.ndarray, mult: int, w: np.ndarray,
                   bias: np.ndarray | None, fill, dtype, parts: int = 1) -> tuple[PhaseInput, list[list]]:
    """The phase buffers and per-thread chunk plans of a depthwise conv computing in ``dtype``."""
    phased = PhaseInput(x, win, mult, fill, dtype)
    return phased, tap_plan(win, phased, out, w.astype(dtype), bias, parts)


def run_plans(phased: PhaseInput, plans: list[list], act=None) -> None:
    """Refresh the phase buffers, then run the chunk plans (in parallel when more than one)."""
    phased.refresh()
    if len(plans) == 1:
        accumulate(plans[0], act)
    else:
        run_parallel([lambda p=p: accumulate(p, act) for p in plans])


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
    # Threads only pay off on big layers: below ~64K outputs the handoff costs more than it saves.
    parts = max(1, min(ctx.num_threads, out.size // PARALLEL_MIN))
    phased, plans = depthwise_plan(win, x, out, mult, np.asarray(w)[0], bias, 0.0, np.float32, parts)
    act = clamp_activation(node)

    def run() -> None:
        run_plans(phased, plans, act)
    return run
