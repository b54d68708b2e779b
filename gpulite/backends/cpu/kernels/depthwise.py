"""DEPTHWISE_CONV_2D, float: fused multiply-adds over the filter taps with ``einsum``.

numpy is about twice as fast on contiguous runs as on short strided ones, so the taps are
arranged to read contiguous rows (see :class:`~gpulite.backends.cpu.phases.PhaseInput`):
the padded input's columns are split into their stride phases (one for stride 1: the
padded input itself, or the input with no copy when there is no padding), so output row y
of tap (i, j) reads OW*C contiguous values of one phase. The taps of one phase form a
regular grid of offsets, hence one strided view
(taps_i, taps_j, rows, OW/T, T*C); a single ``einsum`` sums them against the taps' weights
tiled T times (T*C >= PERIOD: a long inner loop without a large tiled weight array),
writing straight into the output rows. Work goes in chunks of rows sized to stay in cache,
with bias and activation applied per chunk while hot; with ``num_threads`` > 1 big layers
spread the chunks over that many threads (numpy releases the GIL in ``einsum``). Quantized
depthwise (quantized_conv.py) runs the same plan in float64.

Where the compiled loops are available (``cpu_jit`` flag on, a C compiler found), the taps are summed by one compiled
loop instead (:func:`row_plan`, :mod:`gpulite.backends.cpu.jit`): same phase buffers, same
chunks and epilogue, each tap a flat offset into the phase buffer; about 3x faster. A float
layer with depth multiplier 1 that is padded or strided makes no phase buffer at all
(:func:`indirect_program`): the same sums, read through an indirection table or in place.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpulite.backends.cpu import jit
from gpulite.backends.cpu.epilogue import Epilogue
from gpulite.backends.cpu.fast import einsum
from gpulite.backends.cpu.phases import PhaseInput
from gpulite.backends.cpu.threads import run_chunks
from gpulite.backends.cpu.window import Window, tile_count, window
from gpulite.errors import ShapeError, UnsupportedOpError

CHUNK_BUDGET = 1 << 17  # output elements per chunk (512 KiB of float32): measured best, 64K-256K
PERIOD = 2048  # minimum inner-loop length in elements (longer measured faster; caps tiled weights)
# Output elements per thread below which a layer runs on one thread. The phase copy stays
# serial and the chunks are short (~100 us) next to a worker's join (~50-100 us, wake-up and
# GIL hand-offs): on a quiet 2-core machine splitting made every zoo layer slower (pose_landmark's
# 256x256x8 3x3: 0.47 ms on one thread, 0.63 on two at 64K), so only layers far bigger split.
PARALLEL_MIN = 1 << 20
PROGRAM_MIN = 1 << 14  # the same with the compiled loops' pool (jit.Program), a few us per stage
ROW_PERIOD = 256  # compiled loop: minimum segment (elements) sharing one tiled weight row; 128-512 measured alike


def depthwise_geometry(node, x_shape, w_shape, out_shape) -> tuple[Window, int]:
    """Window and depth multiplier of a DEPTHWISE_CONV_2D; ``ShapeError`` on a mismatch."""
    if len(w_shape) != 4 or w_shape[0] != 1:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): filter must be [1, KH, KW, C*M], got {list(w_shape)}")
    _, kh, kw, co = w_shape
    win = window(x_shape, kh, kw, node.options, out_shape, node.pads)
    if win.c == 0 or co % win.c:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): {co} output channels is not a multiple "
                         f"of the input's {win.c}")
    if out_shape[3] != co:
        raise ShapeError(f"node {node.index} (DEPTHWISE_CONV_2D): output should have {co} channels, "
                         f"the model says {list(out_shape)}")
    return win, co // win.c


def _spans(win: Window, co: int, parts: int) -> tuple[list[tuple[int, int, int]], int, int]:
    """Chunks of output rows (image, first row, end row) of about CHUNK_BUDGET outputs (smaller
    with threads, so that each thread gets a few: see
    :func:`~gpulite.backends.cpu.threads.run_chunks`), the rows per chunk and the threads used."""
    rows = max(1, CHUNK_BUDGET // (win.ow * co))
    if parts > 1:
        rows = min(rows, -(-win.oh * win.n // (2 * parts)))
    spans = [(n, y0, min(win.oh, y0 + rows)) for n in range(win.n) for y0 in range(0, win.oh, rows)]
    return spans, rows, max(1, min(parts, len(spans)))


def tap_plan(win: Window, phased: PhaseInput, out: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
             parts: int = 1, epilogue=None, pool=None) -> list[list]:
    """Chunks of output rows, each in ``parts`` variants (one per thread, own scratch each).

    ``chunks[k][t]`` is chunk k for thread t: (output rows, scratch, [(taps view, weights)]
    per phase, bias, post). ``w`` is (KH, KW, C*M). Output rows and scratch are
    (rows, OW/T, T*C*M), a phase's taps view (taps_i, taps_j, rows, OW/T, T*C*M), its
    weights (taps_i, taps_j, T*C*M). ``post`` is the chunk's closure from ``epilogue`` (an
    :class:`~gpulite.backends.cpu.epilogue.Epilogue`) or None. With ``pool`` the scratch
    comes from the executable's shared pool. With threads, chunks are smaller so that each
    thread gets a few (see :func:`~gpulite.backends.cpu.threads.run_chunks`).
    """
    co, wq = out.shape[3], phased.wq
    t = tile_count(win.ow, co, PERIOD)
    length = t * co
    spans, rows, threads = _spans(win, co, parts)
    b = None if bias is None else np.tile(bias, t).astype(out.dtype)
    weights = [np.tile(w[np.ix_(ii, jj)], (1, 1, t)) for _, ii, jj, _, _ in phased.groups]
    item = phased.buf.itemsize
    shape = (min(rows, win.oh), win.ow // t, length)
    scratches = [pool.get(("depthwise", k), shape, out.dtype) if pool is not None else np.empty(shape, out.dtype)
                 for k in range(threads)]
    chunks = []
    for n, y0, y1 in spans:
        shape = (y1 - y0, win.ow // t, length)
        views = []
        for (p, ii, jj, (oy, ox), (sy, sx)), wt in zip(phased.groups, weights, strict=True):
            base = phased.buf[p, n, y0 * phased.row_step + oy, ox:]
            strides = (sy * wq * co * item, sx * co * item, phased.row_step * wq * co * item, length * item, item)
            views.append((as_strided(base, (len(ii), len(jj), *shape), strides, writeable=False), wt))
        p0, p1 = (n * win.oh + y0) * win.ow, (n * win.oh + y1) * win.ow
        acc = out[n, y0:y1].reshape(shape)
        chunks.append([(acc, scratches[k][: y1 - y0], views, b, epilogue.chunk(p0, p1, k) if epilogue else None)
                       for k in range(threads)])
    return chunks


def accumulate(plan: list, act=None) -> None:
    """Run chunks of a :func:`tap_plan`: sum the taps phase by phase, add bias, activate."""
    add = np.add
    for acc, tmp, views, b, post in plan:
        (v0, w0), rest = views[0], views[1:]
        einsum("ijyml,ijl->yml", v0, w0, out=acc)
        for v, wt in rest:
            einsum("ijyml,ijl->yml", v, wt, out=tmp)
            add(acc, tmp, out=acc)
        if b is not None:
            add(acc, b, out=acc)
        if act:
            act(acc)
        if post is not None:
            post()


def row_plan(win: Window, phased: PhaseInput, out: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
             parts: int = 1, epilogue=None) -> list[list]:
    """Chunks of output rows for the compiled loop (:func:`gpulite.backends.cpu.jit.depthwise_rows`).

    Same chunks and thread variants as :func:`tap_plan`; ``chunks[k][t]`` is (the bound
    compiled call, the output rows it writes, post). Every tap (i, j) becomes the flat offset in the phase buffer of its
    first output row's read, output rows being ``row_step`` padded rows apart; taps are
    padded to a multiple of ``jit.GROUP`` with zero weights.
    """
    co, wq, buf = out.shape[3], phased.wq, phased.buf
    if not (buf.flags.c_contiguous and out.flags.c_contiguous):  # flat views below must not be copies
        raise ValueError("row_plan needs C-contiguous phase buffers and output")
    t = tile_count(win.ow, co, ROW_PERIOD)
    period = t * co
    src = buf.reshape(-1)  # PhaseInput's buffers are C-contiguous: a view
    p_stride, n_stride = buf[0].size, buf[0, 0].size
    row_stride = phased.row_step * wq * co
    offs, weights = [], []
    for (p, ii, jj, (oy, ox), (sy, sx)) in phased.groups:
        for a, i in enumerate(ii):
            for b, j in enumerate(jj):
                offs.append(p * p_stride + ((oy + a * sy) * wq + ox + b * sx) * co)
                weights.append(np.tile(w[i, j], t))
    while len(offs) % jit.GROUP:
        offs.append(offs[0])
        weights.append(np.zeros(period, out.dtype))
    offs0 = np.array(offs, np.int64)
    wt = np.ascontiguousarray(weights, out.dtype)
    bt = np.zeros(period, out.dtype) if bias is None else np.tile(bias, t).astype(out.dtype)
    spans, _, threads = _spans(win, co, parts)
    chunks = []
    for n, y0, y1 in spans:
        rows_out = out[n, y0:y1].reshape(y1 - y0, win.ow * co)
        call = jit.depthwise_rows(src, offs0 + n * n_stride + y0 * row_stride, row_stride, wt, bt, rows_out, period)
        p0, p1 = (n * win.oh + y0) * win.ow, (n * win.oh + y1) * win.ow
        chunks.append([(call, rows_out, epilogue.chunk(p0, p1, k) if epilogue else None) for k in range(threads)])
    return chunks


def run_rows(plan: list, act=None) -> None:
    """Run chunks of a :func:`row_plan`: the compiled loop (bias included), then activate."""
    for call, rows_out, post in plan:
        call()
        if act:
            act(rows_out)
        if post is not None:
            post()


def depthwise_plan(win: Window, x: np.ndarray, out: np.ndarray, mult: int, w: np.ndarray,
                   bias: np.ndarray | None, fill, dtype, parts: int = 1, epilogue=None,
                   pool=None) -> tuple[PhaseInput, list[list], object]:
    """The phase buffers, the chunks and the function running a list of them, for a depthwise
    conv computing in ``dtype``: :func:`row_plan` and :func:`run_rows` where the compiled
    loop is available, else :func:`tap_plan` and :func:`accumulate`."""
    phased = PhaseInput(x, win, mult, fill, dtype, pool)
    if jit.available():
        return phased, row_plan(win, phased, out, w.astype(dtype), bias, parts, epilogue), run_rows
    return phased, tap_plan(win, phased, out, w.astype(dtype), bias, parts, epilogue, pool), accumulate


def plan_runner(phased: PhaseInput, chunks: list[list], fn=accumulate, act=None):
    """The run closure: refresh the phase buffers, then run the chunks with ``fn`` (spread
    over threads when they have variants for several; the callables are built here, not
    per invoke)."""
    if fn is run_rows and act is None:  # each chunk's loop, then its epilogue, as one compiled program
        program = jit.kernel_program(phased, [[[call] + ([post] if post is not None else [])
                                               for call, _, post in variants] for variants in chunks])
        if program is not None:
            return program
    if len(chunks[0]) == 1:
        plan = [c[0] for c in chunks]

        def run_one() -> None:
            phased.refresh()
            fn(plan, act)
        return run_one
    fns = [[functools.partial(fn, [item], act) for item in variants] for variants in chunks]

    def run() -> None:
        phased.refresh()
        run_chunks(fns)
    return run


def indirect_program(win: Window, x: np.ndarray, out: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                     parts: int = 1, epilogue=None):
    """The run callable of a float32 depthwise conv with depth multiplier 1 that makes no
    padded or phase-split copy of its input. Pixels with a tap outside the input (all of
    them for a strided layer) sum their taps through the compiled loops' indirection table
    (:func:`gpulite.backends.cpu.jit.indirection`); the interior of a stride-1 layer (every tap
    inside) goes to the row loop, reading the input in place. Then each chunk of output rows
    runs its epilogue. None when the compiled loops are unavailable or the arrays do not suit
    them."""
    co = out.shape[3]
    if not (jit.available() and x.dtype == out.dtype == np.float32 and x.flags.c_contiguous
            and out.flags.c_contiguous and x.shape[3] == co):
        return None
    zero = np.zeros(co, np.float32)
    # the taps summed in the row loop's order (column stride phase first, as PhaseInput groups
    # them): the same float operations per element, so the same values as that plan
    taps = win.kh * win.kw
    order = sorted(range(taps), key=lambda t: ((t % win.kw) * win.dw % win.sw, t // win.kw, t % win.kw))
    table = jit.indirection(x, win, zero, order=order)
    w = np.asarray(w, np.float32).reshape(taps, co)
    wt = np.zeros((table.shape[1], co), np.float32)
    wt[:taps] = w[order]
    bt = np.zeros(co, np.float32) if bias is None else np.asarray(bias, np.float32)
    row = _interior_rows(win, x, w, bt)
    y_lo, y_hi, x_lo, x_hi = row[0] if row is not None else (0, 0, 0, 0)
    out2, item, xs = out.reshape(-1, co), out.itemsize, np.arange(win.ow)
    spans, _, threads = _spans(win, co, parts)
    stage = []
    for n, y0, y1 in spans:
        p0, p1 = (n * win.oh + y0) * win.ow, (n * win.oh + y1) * win.ow
        ya, yb = max(y0, y_lo), min(y1, y_hi)
        if yb <= ya:  # no interior row here: every pixel through the table, in order
            tasks = [jit.depthwise_ind(table[p0:p1], wt, bt, out2[p0:p1], [zero])]
        else:
            ys = np.arange(y0, y1)[:, None]
            border = ((ys < y_lo) | (ys >= y_hi) | (xs < x_lo) | (xs >= x_hi)).reshape(-1)
            pixels = np.flatnonzero(border) + p0
            tasks = [jit.depthwise_ind(np.ascontiguousarray(table[pixels]), wt, bt, out2, [zero], pixels)
                     ] if len(pixels) else []
            src, offs, row_wt, row_bt, period = row[1]
            rows = as_strided(out[n, ya, x_lo:], (yb - ya, (x_hi - x_lo) * co), (win.ow * co * item, item))
            tasks.append(jit.depthwise_rows(src, offs + (n * win.h + ya) * win.w * co, win.w * co, row_wt, row_bt,
                                            rows, period))
        post = epilogue.chunk(p0, p1, 0) if epilogue else None  # threads need no scratch of their own
        stage.append([tasks + ([post] if post is not None else [])] * threads)
    return jit.kernel_program(None, stage)


def _interior_rows(win: Window, x: np.ndarray, w: np.ndarray, bt: np.ndarray):
    """For a stride-1 layer, the interior (output rows y_lo..y_hi, columns x_lo..x_hi: every
    tap inside the input) and the row loop's plan over it: (flat input, tap offsets of output
    row 0, tiled weights, tiled bias, period); None when the layer is strided or has no
    interior. Tap (i, j) of output (y, x) reads input (y - pad_t + i*dh, x - pad_l + j*dw)."""
    y_lo, y_hi = win.pad_t, min(win.oh, win.h - (win.kh - 1) * win.dh + win.pad_t)
    x_lo, x_hi = win.pad_l, min(win.ow, win.w - (win.kw - 1) * win.dw + win.pad_l)
    if win.sh != 1 or win.sw != 1 or y_hi <= y_lo or x_hi <= x_lo:
        return None
    co = w.shape[1]
    t = tile_count(x_hi - x_lo, co, ROW_PERIOD)
    period = t * co
    offs = [((i * win.dh - win.pad_t) * win.w + x_lo - win.pad_l + j * win.dw) * co
            for i in range(win.kh) for j in range(win.kw)]
    row_w = [np.tile(tap, t) for tap in w]
    while len(offs) % jit.GROUP:
        offs.append(offs[0])
        row_w.append(np.zeros(period, np.float32))
    plan = (x.reshape(-1), np.array(offs, np.int64), np.ascontiguousarray(row_w), np.tile(bt, t), period)
    return (y_lo, y_hi, x_lo, x_hi), plan


def float_depthwise_conv_2d(node, ctx):
    """DEPTHWISE_CONV_2D on float32 input (registered, with the integer paths, in :mod:`.quantized_conv`)."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if ctx.const(1) is None or w.dtype != np.float32:
        what = "a non-constant filter" if ctx.const(1) is None else f"a {w.dtype} filter"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"needs a constant float32 filter, got {what}")
    win, mult = depthwise_geometry(node, x.shape, w.shape, out.shape)
    co = w.shape[3]
    if ctx.has_input(2) and ctx.const(2) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "needs a constant bias")
    bias = np.asarray(ctx.const(2), np.float32).reshape(co) if ctx.has_input(2) else None
    # Threads pay off from PROGRAM_MIN outputs each on the compiled loops' pool, from PARALLEL_MIN on the Python one.
    parts = max(1, min(ctx.num_threads, out.size // (PROGRAM_MIN if jit.available() else PARALLEL_MIN)))
    # The plan adds the bias with the taps; activation and fused steps run per chunk, while
    # it is in cache (epilogue.py).
    ep = Epilogue(node, ctx, out)
    if mult == 1 and (win.padded or win.sh > 1 or win.sw > 1):  # no padded or phase-split copy
        program = indirect_program(win, x, out, np.asarray(w)[0], bias, parts, ep or None)
        if program is not None:
            return program
    phased, plans, fn = depthwise_plan(win, x, out, mult, np.asarray(w)[0], bias, 0.0, np.float32, parts,
                                       ep or None, ctx.scratch)
    return plan_runner(phased, plans, fn)
