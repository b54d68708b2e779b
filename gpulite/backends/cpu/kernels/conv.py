"""CONV_2D, float: one GEMM per chunk of output rows (:class:`ConvGemm`).

Weights OHWI are read as a (KH*KW*I, O) matrix: a transposed view of the constant when the
GEMM needs nothing else (BLAS reads it transposed, no copy), else a copy with the bias as
an extra last row where the patches carry a ones column. Each chunk's bias (when not in
the GEMM), activation and fused elementwise steps run right after its GEMM, in cache
(:mod:`gpulite.backends.cpu.epilogue`). Single-output convs take their own path
(:func:`_single_output_conv`); grouped convs run one GEMM per group (:func:`group_gemms`).
Quantized convs are in quantized_conv.py.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpulite.backends.cpu import blas, jit
from gpulite.backends.cpu.epilogue import Epilogue
from gpulite.backends.cpu.fast import einsum
from gpulite.backends.cpu.threads import run_chunks
from gpulite.backends.cpu.window import PaddedInput, Window, patches_view, window
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.model.opdefs import Op

# Elements of im2col scratch per chunk: 256K floats = 1 MiB, about a core's L2.
IM2COL_BUDGET = 1 << 18
# Elements per chunk of a direct (1x1) conv's input or output when it is chunked.
DIRECT_BUDGET = 1 << 16
# A direct conv adds its bias in the GEMM when AUGMENT_DIRECT * (input channels + 1) <= outputs.
AUGMENT_DIRECT = 2
# Multiply-adds per thread below which a conv runs on one thread: a worker takes ~50-100 us
# to join (wake-up, then a GIL hand-off around every numpy call of every chunk), so smaller
# convs lose more than they gain. Measured on a quiet 2-core machine, splitting lost on every
# zoo model (pose_landmark_heavy 70.8 ms split off vs 73.6 at 4M MACs), so only convs far
# bigger than theirs split.
PARALLEL_MACS = 1 << 26
# GEMM rows (output pixels) per thread below which a conv runs on one thread: every chunk's
# GEMM packs the whole weight matrix again, which costs more than the split saves on few rows.
PARALLEL_ROWS = 256
# The same with the compiled loops, whose pool hands a stage to a spinning worker in a few
# microseconds (jit.Program): convs split from about 20 us of work per thread.
PROGRAM_MACS = 1 << 19
PROGRAM_ROWS = 32


def conv_geometry(node, x_shape, w_shape, out_shape) -> tuple[Window, int]:
    """Window of a CONV_2D and its group count; ``ShapeError`` when channels do not fit."""
    if len(w_shape) != 4:
        raise ShapeError(f"node {node.index} (CONV_2D): filter must be 4-D OHWI, got {list(w_shape)}")
    o, kh, kw, ci = w_shape
    win = window(x_shape, kh, kw, node.options, out_shape, node.pads)
    if ci <= 0 or win.c % ci or o % (win.c // ci):
        raise ShapeError(f"node {node.index} (CONV_2D): input has {win.c} channels; filter {list(w_shape)} "
                         f"needs a multiple of {ci} that also divides {o} output channels")
    if out_shape[3] != o or out_shape[0] != win.n:
        raise ShapeError(f"node {node.index} (CONV_2D): output should be [{win.n}, {win.oh}, {win.ow}, {o}], "
                         f"the model says {list(out_shape)}")
    return win, win.c // ci


class ConvGemm:
    """Computes a conv's ``patches @ wt`` into its output: ``gemm(wt)`` or ``gemm.bind(wt)()``.

    A 1x1 stride-1 unpadded conv multiplies the input viewed as (pixels, C) directly. Any
    other conv copies patches (im2col) from a padded copy of the input into a scratch,
    chunk by chunk of output rows so the scratch stays in cache while BLAS reads it. With
    ``augment`` the matrix gets a last column of ones so that a bias stored as the last row
    of ``wt`` is added by the GEMM itself instead of a pass over the output; for a direct
    conv that costs a copy of the input. ``dtype`` widens the input (quantized convs
    multiply exactly in float64), which also forces the copy.

    The float kernel also passes ``pool`` (the executable's shared :class:`ScratchPool`:
    the im2col scratch is then one buffer for every conv, and the ones column is written
    again per chunk), ``epilogue`` (an :class:`~gpulite.backends.cpu.epilogue.Epilogue`
    applied to each chunk right after its GEMM; direct convs are then chunked too) and
    ``parts`` (threads taking the chunks, see :func:`~gpulite.backends.cpu.threads.run_chunks`;
    BLAS itself runs single-threaded).
    """

    def __init__(self, win: Window, x: np.ndarray, out: np.ndarray, fill, dtype=None,
                 augment: bool = False, pool=None, epilogue=None, parts: int = 1) -> None:
        dtype = np.dtype(dtype or x.dtype)
        k, o = win.kh * win.kw * win.c, out.shape[-1]
        self.k, self.pad = k + int(augment), None
        out2 = out.reshape(-1, o)
        # chunks[c][t]: chunk c as thread t runs it (its own scratch): (copies, a, out rows, post),
        # copies being the calls that fill ``a`` (im2col: compiled, see jit.py, or numpy)
        self.chunks: list[list[tuple]] = []
        if win.kh == win.kw == 1 and win.sh == win.sw == 1 and not win.padded:
            x2 = x.reshape(-1, win.c)
            if pool is None and (augment or dtype != x.dtype):
                mat = np.ones((x2.shape[0], self.k), dtype)
                self.chunks = [[([functools.partial(np.copyto, mat[:, :k], x2)], mat, out2, None)]]
                return
            total = out2.shape[0]
            chunked = epilogue is not None or parts > 1 or augment
            step = max(1, DIRECT_BUDGET // max(o, self.k, 1)) if chunked else total
            if parts > 1:  # a chunk per thread (a late worker's is taken by the caller, see threads.py)
                step = min(step, -(-total // parts))
            spans = [(p, min(total, p + step)) for p in range(0, total, step)]
            threads = max(1, min(parts, len(spans)))
            # [x | 1] per chunk in the shared scratch, so the GEMM adds the bias (its last row)
            mats = [pool.get(("im2col", t), (step, self.k), dtype) for t in range(threads)] if augment else []
            for p0, p1 in spans:
                variants = []
                for t in range(threads):
                    if augment:
                        mat = mats[t][: p1 - p0]
                        copies = [jit.copy_task(mat[:, :k], x2[p0:p1])
                                  or functools.partial(np.copyto, mat[:, :k], x2[p0:p1]),
                                  jit.fill_task(mat[:, k:], 1.0) or functools.partial(np.copyto, mat[:, k], 1.0)]
                        a = mat
                    else:
                        copies, a = [], x2[p0:p1]
                    variants.append((copies, a, out2[p0:p1], epilogue.chunk(p0, p1, t) if epilogue else None))
                self.chunks.append(variants)
            return
        self.pad = PaddedInput(x, win, fill, dtype, pool)
        compiled = jit.available() and self.pad.buf.flags.c_contiguous
        rows = max(1, IM2COL_BUDGET // max(win.ow * self.k, 1))
        if parts > 1:
            rows = min(rows, -(-win.oh * win.n // parts))
        spans = [(n, r0, min(win.oh, r0 + rows)) for n in range(win.n) for r0 in range(0, win.oh, rows)]
        threads = max(1, min(parts, len(spans)))
        shape = (min(rows, win.oh) * win.ow, self.k)
        item = np.dtype(dtype).itemsize
        scratches = [pool.get(("im2col", t), shape, dtype) if pool is not None else np.ones(shape, dtype)
                     for t in range(threads)]
        for n, r0, r1 in spans:
            p0, p1 = (n * win.oh + r0) * win.ow, (n * win.oh + r1) * win.ow
            variants = []
            for t in range(threads):
                cols = scratches[t][: (r1 - r0) * win.ow]
                if compiled:
                    copies = [jit.im2col_rows(self.pad.buf[n], cols, r0, win.ow, win.sh, win.sw, win.dh, win.dw,
                                              win.kh, win.kw)]
                else:  # the first k columns of cols seen as (rows, OW, KH, KW, C), the patches' shape
                    dst = as_strided(cols, (r1 - r0, win.ow, win.kh, win.kw, win.c),
                                     (win.ow * self.k * item, self.k * item, win.kw * win.c * item, win.c * item, item))
                    copies = [functools.partial(np.copyto, dst, patches_view(self.pad.buf, win, n, r0, r1))]
                if augment and pool is not None:  # the shared scratch holds other data between runs
                    copies.append(jit.fill_task(cols[:, k:], 1.0) or functools.partial(np.copyto, cols[:, k], 1.0))
                post = epilogue.chunk(p0, p1, t) if epilogue is not None else None
                variants.append((copies, cols, out2[p0:p1], post))
            self.chunks.append(variants)

    def bind(self, wt: np.ndarray):
        """The run closure multiplying by ``wt`` (read at run time: it may be refreshed in place)."""
        pad = self.pad
        program = jit.kernel_program(pad, [[[*copies, jit.gemm_task(a, wt, o)] + ([post] if post is not None else [])
                                            for copies, a, o, post in variants] for variants in self.chunks])
        if program is not None:
            return program
        if len(self.chunks[0]) == 1:  # one thread: one job over every chunk
            job = functools.partial(_run_items, [c[0] for c in self.chunks], wt)
            if pad is None:
                return job

            def run_one() -> None:
                pad.refresh()
                job()
            return run_one
        fns = [[functools.partial(_run_items, [item], wt) for item in variants] for variants in self.chunks]
        setter = blas.local_thread_setter()

        def run() -> None:
            if pad is not None:
                pad.refresh()
            # the chunks are spread over the pool: BLAS must not start threads of its own
            prev = setter(1) if setter is not None else 1
            try:
                run_chunks(fns)
            finally:
                if prev != 1:
                    setter(prev)
        return run

    def __call__(self, wt: np.ndarray) -> None:
        self.bind(wt)()


def _run_items(items: list, wt: np.ndarray) -> None:
    matmul = np.matmul
    for copies, a, o, post in items:
        for copy in copies:
            copy()
        matmul(a, wt, out=o)
        if post is not None:
            post()


def conv_parts(num_threads: int, macs: int, rows: int) -> int:
    """Threads worth using for a conv of ``macs`` multiply-adds over ``rows`` output pixels:
    with the compiled loops' pool (a stage costs microseconds) from PROGRAM_MACS per thread,
    else (Python workers) from PARALLEL_MACS."""
    if jit.available():
        return max(1, min(num_threads, macs // PROGRAM_MACS, rows // PROGRAM_ROWS))
    return max(1, min(num_threads, macs // PARALLEL_MACS, rows // PARALLEL_ROWS))


def float_conv_2d(node, ctx):
    """CONV_2D on float32 input (registered, with the integer paths, in :mod:`.quantized_conv`)."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if w.dtype != np.float32:
        raise UnsupportedOpError(Op.CONV_2D, node.index, "cpu", f"float input needs float32 filter, got {w.dtype}")
    win, groups = conv_geometry(node, x.shape, w.shape, out.shape)
    o, kh, kw, ci = w.shape
    if groups != 1:
        return _grouped_conv(node, ctx, win, groups)
    wconst = ctx.const(1)
    if o == 1 and kh * kw > 1 and wconst is not None:
        return _single_output_conv(node, ctx, win, wconst)
    k = kh * kw * ci
    bias = ctx.input(2).reshape(o) if ctx.has_input(2) else None
    direct = kh == kw == 1 and win.sh == win.sw == 1 and not win.padded
    # A constant bias is added by the GEMM (a ones column after the patches) for im2col
    # convs, and for direct convs whose input is narrow enough that copying it next to a
    # ones column costs less than a pass adding the bias to the (wider) output.
    augment = bias is not None and ctx.const(2) is not None and (not direct or AUGMENT_DIRECT * (ci + 1) <= o)
    ep = Epilogue(node, ctx, out, bias=None if augment else bias, bias_const=ctx.const(2) is not None)
    parts = conv_parts(ctx.num_threads, out.size // o * k * o, out.size // o)
    gemm = ConvGemm(win, x, out, 0.0, augment=augment, pool=ctx.scratch, epilogue=ep or None, parts=parts)
    if wconst is not None and not augment:
        # BLAS reads the (O, K) filter transposed in place: no copy of the weights.
        return gemm.bind(wconst.reshape(o, k).T)
    wt = np.empty((gemm.k, o), np.float32)  # rows (kh, kw, ci) match the patches; then the bias
    if wconst is not None:
        np.copyto(wt[:k], wconst.reshape(o, k).T)
    if augment:
        np.copyto(wt[k], bias)
    run_gemm = gemm.bind(wt)
    if wconst is not None:
        return run_gemm

    def run() -> None:
        np.copyto(wt[:k], w.reshape(o, k).T)
        run_gemm()
    return run


def group_gemms(win: Window, groups: int, x: np.ndarray, out: np.ndarray, w: np.ndarray, fill, dtype=None,
                pool=None, parts: int = 1) -> list:
    """The run closures of a grouped conv (``groups`` > 1), one :class:`ConvGemm` per group.

    Group ``g`` reads input channels ``g*ci:(g+1)*ci`` and writes output channels
    ``g*og:(g+1)*og``, both strided views (a 1x1 conv's GEMM reads its input view in place,
    BLAS with a row stride; the others copy it into their padded buffer), and multiplies by
    the transposed view of its rows of ``w`` (OHWI, read at run time). The groups share the
    scratch: they run one after the other.
    """
    o, ci = w.shape[0], win.c // groups
    og, k = o // groups, win.kh * win.kw * ci
    wing = replace(win, c=ci)
    runs = []
    for g in range(groups):
        gemm = ConvGemm(wing, x[..., g * ci:(g + 1) * ci], out[..., g * og:(g + 1) * og], fill, dtype,
                        pool=pool, parts=parts)
        wt = w[g * og:(g + 1) * og].reshape(og, k).T
        runs.append(gemm.bind(wt if dtype is None else np.ascontiguousarray(wt, dtype)))
    return runs


def _grouped_conv(node, ctx, win: Window, groups: int):
    """A grouped CONV_2D (filter of C/groups input channels: ResNeXt, RegNet, ShuffleNet): one
    GEMM per group, as LiteRT's reference conv sums over the group's channels; then the bias,
    activation and fused steps over the whole output."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    o, kh, kw, ci = w.shape
    bias = ctx.input(2).reshape(o) if ctx.has_input(2) else None
    parts = conv_parts(ctx.num_threads, out.size * kh * kw * ci, out.size // o)
    runs = group_gemms(win, groups, x, out, w, 0.0, pool=ctx.scratch, parts=parts)
    ep = Epilogue(node, ctx, out, bias=bias, bias_const=ctx.const(2) is not None)
    post = ep.chunk(0, out.size // o)
    if post is not None:
        runs.append(post)

    def run() -> None:
        for r in runs:
            r()
    return run


def _single_output_conv(node, ctx, win: Window, w: np.ndarray):
    """A conv to one output channel (segmentation heads): channels first, then the taps.

    im2col would copy KH*KW*C values per pixel to feed a GEMM with a single column. Here
    one GEMM (T, C) @ (C, pixels) weighs the channels of every padded input pixel for each
    of the T = KH*KW taps at once, and the output sums the T planes, each read at its tap's
    offset: one strided view of the planes and one ``einsum`` reduction (about 2.5x faster
    than summing depthwise taps per channel on pose_landmark's 256x256x8 head).
    """
    x, out = ctx.input(0), ctx.output(0)
    pad = PaddedInput(x, win, 0.0, pool=ctx.scratch)
    n, hp, wp = pad.buf.shape[:3]
    taps = win.kh * win.kw
    wt = np.ascontiguousarray(np.asarray(w, np.float32).reshape(taps, win.c))
    planes = ctx.scratch.get(("single_output_conv",), (n, taps, hp * wp), np.float32)
    s = planes.itemsize
    calls = []
    for b in range(n):
        # plane t of image b read at tap (i, j)'s offset, for every output pixel
        view = as_strided(planes[b], (win.kh, win.kw, win.oh, win.ow),
                          ((win.kw * hp * wp + win.dh * wp) * s, (hp * wp + win.dw) * s, win.sh * wp * s, win.sw * s),
                          writeable=False)
        calls.append((pad.buf[b].reshape(hp * wp, win.c).T, planes[b], view, out[b, :, :, 0]))
    bias = ctx.input(2).reshape(1) if ctx.has_input(2) else None
    post = Epilogue(node, ctx, out, bias=bias, bias_const=ctx.const(2) is not None).chunk(0, out.size)

    def run() -> None:
        pad.refresh()
        for xt, z, view, o in calls:
            np.matmul(wt, xt, out=z)
            einsum("ijyx->yx", view, out=o)
        if post is not None:
            post()
    return run
