"""AVERAGE_POOL_2D and MAX_POOL_2D, float and int8/uint8/int16 (the 16x8 mode), and float L2_POOL_2D.

Both reduce windows of a padded input (:func:`window_reducer`). TFLite ignores padded
pixels: max pooling pads with the lowest value (TFLite starts its max at ``lowest()``),
average pooling pads with 0 and divides by the count of valid pixels under each window,
precomputed once. Quantized average pooling sums in int32 and divides rounding half away
from zero, as ``integer_ops::AveragePool``; quantized max pooling clamps to the fused
activation's range.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpulite.backends.cpu import jit
from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.quant import output_bounds, per_tensor
from gpulite.backends.cpu.window import PaddedInput, Window, tap_view, window
from gpulite.backends.kernels import register_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.model.opdefs import Op

SMALL_WINDOW = 16  # up to this many taps, fold tap views; beyond, reduce (separably)
PROGRAM_MIN = 1 << 14  # output elements per thread from which compiled max pooling splits
_LOWEST = {np.dtype(np.float32): np.finfo(np.float32).min, np.dtype(np.int8): -128, np.dtype(np.uint8): 0,
           np.dtype(np.int16): -32768}


def _setup(node, ctx) -> tuple[np.ndarray, np.ndarray, Window]:
    x, out = ctx.input(0), ctx.output(0)
    o = node.options
    if x.dtype not in _LOWEST or out.dtype != x.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"expected float32, int8, uint8 or int16 in and out alike, got {x.dtype} -> "
                                 f"{out.dtype}")
    win = window(x.shape, int(o.filter_height), int(o.filter_width), o, out.shape)
    if x.dtype != np.float32:
        # TFLite requires equal input and output quantization for pooling; rescaling is not done.
        (si, zi), (so, zo) = per_tensor(node, ctx.in_info(0), "input"), per_tensor(node, ctx.out_info(0), "output")
        if abs(si - so) > 1e-6 or zi != zo:  # TFLite's own check in pooling.cc Prepare
            raise UnsupportedOpError(node.op, node.index, "cpu", f"input and output quantization must match, "
                                     f"got scale/zero point {si}/{zi} in and {so}/{zo} out")
    return x, out, win


def _valid_counts(win: Window) -> np.ndarray:
    """(OH, OW, 1) count of input pixels (not padding) under each window."""
    def axis(size, k, s, pad, out):
        start = np.arange(out) * s - pad
        return np.minimum(start + k, size) - np.maximum(start, 0)
    rows = axis(win.h, win.kh, win.sh, win.pad_t, win.oh)
    cols = axis(win.w, win.kw, win.sw, win.pad_l, win.ow)
    return (rows[:, None] * cols[None, :])[..., None].astype(np.int32)


def window_reducer(ufunc, buf: np.ndarray, win: Window, acc: np.ndarray):
    """A no-argument callable writing ``ufunc``'s reduction of every window of ``buf`` into ``acc``.

    Small windows fold the taps one strided view at a time (fastest in numpy); a window over
    the whole unpadded input is one reduction of the image viewed as (N, H*W, C); other large
    windows reduce separably, along W into a scratch then along H (KW + KH, not KH*KW, work).
    Reductions accumulate in ``acc.dtype``.
    """
    if win.kh * win.kw <= SMALL_WINDOW:
        taps = [tap_view(buf, win, i, j) for i in range(win.kh) for j in range(win.kw)]

        def fold() -> None:
            np.copyto(acc, taps[0])
            for v in taps[1:]:
                ufunc(acc, v, out=acc)
        return fold
    if win.oh == win.ow == 1 and buf.shape[1:3] == (win.kh, win.kw):
        image, flat_acc = buf.reshape(win.n, -1, win.c), acc.reshape(win.n, win.c)
        return lambda: ufunc.reduce(image, axis=1, out=flat_acc)
    sn, sy, sx, sc = buf.strides
    rows = as_strided(buf, (win.n, buf.shape[1], win.ow, win.kw, win.c), (sn, sy, sx * win.sw, sx * win.dw, sc))
    stage = np.empty((win.n, buf.shape[1], win.ow, win.c), acc.dtype)
    tn, ty, tx, tc = stage.strides
    cols = as_strided(stage, (win.n, win.oh, win.ow, win.kh, win.c), (tn, ty * win.sh, tx, ty * win.dh, tc))

    def separable() -> None:
        ufunc.reduce(rows, axis=3, out=stage)
        ufunc.reduce(cols, axis=3, out=acc)
    return separable


@register_kernel(Op.MAX_POOL_2D, "cpu")
def max_pool_2d(node, ctx):
    x, out, win = _setup(node, ctx)
    if x.dtype == np.float32 and clamp_fn(node.activation) is None:
        program = _max_pool_program(x, out, win, ctx.num_threads)
        if program is not None:
            return program
    pad = PaddedInput(x, win, _LOWEST[x.dtype])
    reduce = window_reducer(np.maximum, pad.buf, win, out)
    if x.dtype == np.float32:
        act, bounds = clamp_fn(node.activation), None
    else:
        act, bounds = None, output_bounds(node, ctx.out_info(0))

    def run() -> None:
        pad.refresh()
        reduce()
        if act:
            act(out)
        if bounds is not None:
            np.clip(out, bounds[0], bounds[1], out=out)
    return run


def _max_pool_program(x: np.ndarray, out: np.ndarray, win: Window, num_threads: int):
    """Float max pooling as compiled tasks reading the input through an indirection table
    (no padded copy; padding reads a vector of the lowest float), chunks of output rows split
    over up to ``num_threads`` threads; None when the compiled loops are unavailable."""
    if not (jit.available() and x.flags.c_contiguous and out.flags.c_contiguous):
        return None
    lowest = np.full(win.c, _LOWEST[x.dtype], np.float32)
    table = jit.indirection(x, win, lowest, group=1)
    out2 = out.reshape(-1, win.c)
    rows = win.n * win.oh
    threads = max(1, min(num_threads, out.size // PROGRAM_MIN, rows))
    stage = [[[jit.maxpool_ind(table[a * win.ow:b * win.ow], out2[a * win.ow:b * win.ow], [lowest])]] * threads
             for a, b in jit.spans(rows, threads)]
    return jit.kernel_program(None, stage)


@register_kernel(Op.AVERAGE_POOL_2D, "cpu")
def average_pool_2d(node, ctx):
    x, out, win = _setup(node, ctx)
    counts = _valid_counts(win)
    if (counts <= 0).any():
        raise UnsupportedOpError(node.op, node.index, "cpu", "a window covers only padding")
    if x.dtype == np.float32:
        pad = PaddedInput(x, win, 0.0)
        # Big windows sum in float64: closer to any order of float32 summation LiteRT uses.
        big = win.kh * win.kw > SMALL_WINDOW
        acc = np.empty(out.shape, np.float64) if big else out
        fcounts, act = counts.astype(acc.dtype), clamp_fn(node.activation)
    else:
        pad = PaddedInput(x, win, 0, np.int32)  # int32 sums; padding adds nothing
        acc = np.empty(out.shape, np.int32)
        sign = np.empty(out.shape, np.int32)
        half = counts // 2
        lo, hi = output_bounds(node, ctx.out_info(0))
    reduce = window_reducer(np.add, pad.buf, win, acc)

    def run() -> None:
        pad.refresh()
        reduce()
        if x.dtype == np.float32:
            np.divide(acc, fcounts, out=acc)
            if acc is not out:
                np.copyto(out, acc, casting="same_kind")
            if act:
                act(out)
            return
        # (|acc| + count/2) / count with the sign put back: C's truncating division of
        # acc ± count/2, i.e. rounding half away from zero.
        np.sign(acc, out=sign)
        np.abs(acc, out=acc)
        np.add(acc, half, out=acc)
        np.floor_divide(acc, counts, out=acc)
        np.multiply(acc, sign, out=acc)
        np.clip(acc, lo, hi, out=acc)
        np.copyto(out, acc, casting="unsafe")
    return run


@register_kernel(Op.L2_POOL_2D, "cpu")
def l2_pool_2d(node, ctx):
    """Float32 ``sqrt(mean of x**2)`` over the valid pixels of each window (LiteRT's L2Pool)."""
    x, out, win = _setup(node, ctx)
    if x.dtype != np.float32:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float32 only (LiteRT's kernel), got {x.dtype}")
    counts = _valid_counts(win).astype(np.float32)
    if (counts <= 0).any():
        raise UnsupportedOpError(node.op, node.index, "cpu", "a window covers only padding")
    pad = PaddedInput(x, win, 0.0)  # may be x itself: the squares go to their own buffer
    squares = np.empty_like(pad.buf)
    reduce = window_reducer(np.add, squares, win, out)
    act = clamp_fn(node.activation)

    def run() -> None:
        pad.refresh()
        np.square(pad.buf, out=squares)
        reduce()
        np.divide(out, counts, out=out)
        np.sqrt(out, out=out)
        if act:
            act(out)
    return run
