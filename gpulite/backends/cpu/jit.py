"""Compiled loops for the CPU backend's hottest spots, run as programs over a C thread pool.

numpy has no fused loop over shifted rows: ``einsum`` sums a depthwise conv's taps at about
7 GMAC/s here, where one compiled loop reading nine shifted rows and writing the output
once runs at about 20; a conv epilogue of three numpy passes (residual add, PReLU) costs
as much as the GEMM before it; and a Python thread pool costs 50-100 us per hand-off (a
wake-up and GIL hand-offs around every numpy call), more than a zoo layer's share of work.
So ``loops.c`` holds the loops (depthwise taps by rows or through an indirection table,
epilogue steps, im2col, max pooling, 2x upsampling, strided copies and fills, MediaPipe's
bilinear sampler, landmark matrix and landmark transform) and a small thread pool; GEMMs
call numpy's own OpenBLAS ``sgemm`` (:func:`gemm_task`). A kernel binds
its work once, when it is built, as :class:`Task` objects (a loop and an int64 array of its
arguments) grouped into a :class:`Program`: stages of chunks, each chunk a list of tasks,
one variant per thread. An invoke then makes one ctypes call per kernel, which spreads each
stage's chunks over the pool (see ``loops.c`` for how threads take chunks and sleep when
idle). Geometry, planning and everything else stay numpy, and the numpy kernels stay the
reference and the fallback.

``loops.c`` is compiled on first use by the C compiler named by ``GPULITE_CC`` (else ``cc``,
``gcc`` or ``clang`` on PATH; no other variable is read), with
``-O3 -march=native -ffp-contract=off`` (no fused multiply-adds: each element gets the
float operations of the numpy kernels), into a per-user cache (``GPULITE_CACHE_DIR``, else
``~/.cache/gpulite``, then ``cpu-loops/``) keyed by the source, the flags and the machine, and
loaded with ctypes. A cached library is loaded only if it and its directory belong to the
user and are writable by no one else, and it matches the SHA-256 digest its builder wrote
beside it; otherwise (or if loading fails) it is rebuilt. No compiler, a failed build, or
the ``cpu_jit`` flag off (``GPULITE_CPU_JIT=0``): the backend logs why once and uses numpy
only. (numba did the same at the same speed,
but importing it adds ~120 MiB to a process's peak memory.)

The loops do not check bounds: every task is bound once, when its kernel is built, after
:func:`check_rows`, :func:`check_im2col` and the like proved it stays inside its arrays.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import subprocess
import threading
from pathlib import Path

import numpy as np

from gpulite import native
from gpulite.backends.cpu import blas
from gpulite.backends.cpu.blas import cpu_flags
from gpulite.environment import env

log = logging.getLogger("gpulite.cpu")
GROUP = 9  # taps summed per pass over an output segment; tap lists are padded to a multiple
SOURCE = Path(__file__).with_name("loops.c")
FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC", "-pthread"]
_lock = threading.Lock()
_lib: ctypes.CDLL | bool | None = None  # None: not tried yet; False: unavailable
_why = ""  # why the build failed, once it has
_i64 = ctypes.c_int64
TASKS = ("task_depthwise_f32", "task_depthwise_ind_f32", "task_maxpool_ind_f32", "task_depthwise_f64",
         "task_im2col_f32", "task_im2col_f64", "task_epilogue", "task_copy_f32", "task_fill_f32", "task_gemm_f32",
         "task_up2_cols", "task_up2_rows", "task_bilinear_f32", "task_landmarks_matrix_f32",
         "task_transform_landmarks_f32")
# How long an idle pool worker spins for the next stage before it sleeps: an invoke's next
# kernel follows within tens of microseconds; after the invoke the process is idle again
# within this time.
SPIN_NS = 200_000


def compiler() -> str:
    """The C compiler (:func:`gpulite.native.compiler`)."""
    return native.compiler()


def cache_entry(cc: str) -> Path:
    """Where the library built by ``cc`` is cached (its digest is beside it, plus ``.sha256``)."""
    return native.cache_entry(SOURCE, FLAGS, cc, "cpu-loops", " ".join(sorted(cpu_flags())).encode())


def _load(lib: Path) -> ctypes.CDLL:
    dll = ctypes.CDLL(str(lib))
    # No argtypes: every call passes one ready ctypes pointer (Task, Program), which ctypes
    # hands over as it is.
    for f in ("run_program", *TASKS):
        getattr(dll, f).restype = None
    dll.set_spin_ns(_i64(SPIN_NS))
    return dll


def _build() -> ctypes.CDLL:
    """Load the cached build of ``loops.c`` if it verifies, else compile it (:func:`gpulite.native.build`);
    ``OSError`` on failure."""
    return native.build(SOURCE, FLAGS, "cpu-loops", _load, what="CPU backend: cached compiled loops",
                        cache_name="compiled-loops", extra=" ".join(sorted(cpu_flags())).encode())


class Task:
    """One compiled loop with its arguments bound (arrays as addresses, which it keeps alive):
    call it, or put it in a :class:`Program`."""

    __slots__ = ("addr", "args", "fn", "keep", "ptr")

    def __init__(self, lib: ctypes.CDLL, name: str, *values) -> None:
        self.keep = [v for v in values if isinstance(v, np.ndarray)]
        self.args = np.array([v.ctypes.data if isinstance(v, np.ndarray) else int(v) for v in values], np.int64)
        self.fn = getattr(lib, name)
        self.addr = ctypes.cast(self.fn, ctypes.c_void_p).value
        self.ptr = ctypes.c_void_p(self.args.ctypes.data)

    def __call__(self) -> None:
        self.fn(self.ptr)


class Program:
    """Stages run one after the other by one compiled call; ``stages[s][k][t]`` is the list
    of tasks chunk ``k`` of stage ``s`` runs on thread ``t`` (every chunk of a stage has the
    same number of variants, one per thread; variants differ only in their scratch). The
    chunks of a stage are spread over the compiled loops' thread pool (see ``loops.c``);
    chunks must write disjoint memory."""

    def __init__(self, lib: ctypes.CDLL, stages: list[list[list[list[Task]]]]) -> None:
        words = [len(stages)] + [0] * len(stages)
        for s, chunks in enumerate(stages):
            n, v = len(chunks), len(chunks[0])
            if n == 0 or any(len(c) != v for c in chunks):
                raise ValueError(f"program stage {s}: every chunk needs the same number of variants")
            words[1 + s] = head = len(words)
            words += [n, v] + [0] * (n * v)
            for k, variants in enumerate(chunks):
                for t, tasks in enumerate(variants):
                    words[head + 2 + k * v + t] = len(words)
                    words.append(len(tasks))
                    for task in tasks:
                        words += [task.addr, task.args.ctypes.data]
        self.tasks = [task for chunks in stages for variants in chunks for tasks in variants for task in tasks]
        self.words = np.array(words, np.int64)
        self.fn, self.ptr = lib.run_program, ctypes.c_void_p(self.words.ctypes.data)

    def __call__(self) -> None:
        self.fn(self.ptr)


def program(stages: list[list[list[list[Task]]]]) -> Program | None:
    """A :class:`Program` of ``stages``; None when the compiled loops are unavailable."""
    lib = _library()
    return None if lib is None else Program(lib, stages)


def kernel_program(source, stage: list[list[list]]):
    """The run callable of a kernel whose chunks ``stage[k][t]`` are lists of tasks, after
    ``source`` (a :class:`~gpulite.backends.cpu.window.PaddedInput` or
    :class:`~gpulite.backends.cpu.phases.PhaseInput`, or None) is refreshed: its copy as a
    first stage split over as many threads, else its ``refresh`` then the program. None
    unless every chunk's piece is a compiled task."""
    if not all(isinstance(task, Task) for variants in stage for tasks in variants for task in tasks):
        return None
    threads = len(stage[0])
    copies = source.chunks(threads) if source is not None else []
    first = [[list(tasks) for _ in range(threads)] for tasks in copies] if copies else []
    run = program(([first] if first else []) + [stage])
    if run is None or copies is not None:
        return run
    refresh = source.refresh

    def run_after_refresh() -> None:
        refresh()
        run()
    return run_after_refresh


def _library() -> ctypes.CDLL | None:
    global _lib, _why
    if not env().get("cpu_jit"):
        return None
    if _lib is None:
        with _lock:
            if _lib is None:
                try:
                    _lib = _build()
                except (OSError, subprocess.SubprocessError) as e:
                    log.warning("CPU backend: compiled loops unavailable, using numpy only (%s)", e)
                    _lib, _why = False, str(e)
    return _lib or None


def available() -> bool:
    """Whether the compiled loops are used (``cpu_jit`` on and ``loops.c`` built)."""
    return _library() is not None


def status() -> str:
    """One line for ``gpulite info``: whether the compiled loops run and, if not, why."""
    if not env().get("cpu_jit"):
        return "numpy only (flag cpu_jit is off)"
    if available():
        return f"compiled loops active ({SOURCE.name} built with the system C compiler)"
    return f"numpy only: compiled loops unavailable ({_why})"


def _p(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)  # keeps a reference to ``a``


def _suffix(dtype: np.dtype) -> str:
    if dtype == np.float32:
        return "f32"
    if dtype == np.float64:
        return "f64"
    raise ValueError(f"compiled loops take float32 or float64 arrays, got {dtype}")


def check_rows(src: np.ndarray, offs: np.ndarray, row_stride: int, wt: np.ndarray, bt: np.ndarray,
               out: np.ndarray, period: int) -> None:
    """Raise ``ValueError`` unless a :func:`depthwise_rows` call stays inside its arrays."""
    rows, length = out.shape
    item = out.itemsize
    ok = (src.ndim == 1 and src.flags.c_contiguous and out.ndim == 2 and out.strides[1] == item
          and out.strides[0] >= length * item and out.strides[0] % item == 0 and wt.flags.c_contiguous
          and bt.flags.c_contiguous and offs.dtype == np.int64 and offs.flags.c_contiguous
          and period > 0 and length % period == 0 and len(offs) % GROUP == 0 and len(offs) > 0
          and wt.shape == (len(offs), period) and bt.shape == (period,)
          and src.dtype == wt.dtype == bt.dtype == out.dtype
          and int(offs.min()) >= 0 and (rows - 1) * row_stride + int(offs.max()) + length <= src.size)
    if not ok:
        raise ValueError(f"depthwise_rows: inconsistent plan (src {src.shape}, {len(offs)} taps, rows of "
                         f"{length} every {row_stride}, period {period}, out {out.shape})")


def depthwise_rows(src: np.ndarray, offs: np.ndarray, row_stride: int, wt: np.ndarray, bt: np.ndarray,
                   out: np.ndarray, period: int):
    """The bound call setting, for every row r of the 2-D ``out`` (rows may be apart: a view)
    and every m, ``out[r, m] = bt[m % P] + sum_t src[r*row_stride + offs[t] + m] * wt[t, m % P]``
    (P = ``period``, dividing ``out.shape[1]``; ``offs`` a multiple of :data:`GROUP` taps,
    padded with zero weights). None when the compiled loops are unavailable."""
    lib = _library()
    if lib is None:
        return None
    check_rows(src, offs, row_stride, wt, bt, out, period)
    return Task(lib, f"task_depthwise_{_suffix(out.dtype)}", src, offs, len(offs), row_stride, wt, bt, out,
                out.shape[0], out.shape[1], period, out.strides[0] // out.itemsize)


def check_im2col(src: np.ndarray, dst: np.ndarray, r0: int, ow: int, sh: int, sw: int, dh: int, dw: int,
                 kh: int, kw: int) -> None:
    """Raise ``ValueError`` unless an :func:`im2col_rows` call stays inside its arrays."""
    rows = dst.shape[0] // max(ow, 1)
    ok = (src.ndim == 3 and dst.ndim == 2 and src.flags.c_contiguous and dst.flags.c_contiguous
          and src.dtype == dst.dtype and ow > 0 and dst.shape[0] == rows * ow and rows > 0
          and dst.shape[1] >= kh * kw * src.shape[2] and r0 >= 0
          and (r0 + rows - 1) * sh + (kh - 1) * dh < src.shape[0] and (ow - 1) * sw + (kw - 1) * dw < src.shape[1])
    if not ok:
        raise ValueError(f"im2col_rows: inconsistent plan (src {src.shape}, dst {dst.shape}, rows from {r0}, "
                         f"OW {ow}, filter {kh}x{kw}, stride {sh}x{sw}, dilation {dh}x{dw})")


def im2col_rows(src: np.ndarray, dst: np.ndarray, r0: int, ow: int, sh: int, sw: int, dh: int, dw: int,
                kh: int, kw: int):
    """The bound call writing the patches of output rows r0.. of the padded (H, W, C) image
    ``src`` into the first KH*KW*C columns of the 2-D ``dst`` (one row per output pixel,
    ``ow`` per output row): ``dst[q, (i*kw + j)*C + c] = src[y*sh + i*dh, x*sw + j*dw, c]``
    for (y, x) = (r0 + q // ow, q % ow). None when the compiled loops are unavailable."""
    lib = _library()
    if lib is None:
        return None
    check_im2col(src, dst, r0, ow, sh, sw, dh, dw, kh, kw)
    return Task(lib, f"task_im2col_{_suffix(dst.dtype)}", src, src.shape[1], src.shape[2], dst, dst.shape[1],
                dst.shape[0] // ow, r0, ow, sh, sw, dh, dw, kh, kw)


def epilogue_steps(o: np.ndarray, res: np.ndarray | None, codes: np.ndarray, vecs: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, period: int, channels: int):
    """The bound call applying steps ``codes`` to the 1-D float32 ``o`` (pixels of
    ``channels`` values) block by block of ``period`` elements (whole pixels): 0 bias
    ``vecs[s]``, 1 clamp to [lo, hi], 2 add ``res`` ((pixels, RC): to each pixel's first RC
    channels), 3/4/5 PReLU with slopes ``vecs[s]`` (max(x, ax), min(x, ax), general), 6 hard
    swish. Each step does its numpy kernel's float32 operations in the same order, so the
    values are identical. None when unavailable."""
    lib = _library()
    if lib is None:
        return None
    n = o.shape[0]
    rc = channels if res is None else res.shape[-1]
    ok = (o.ndim == 1 and o.dtype == np.float32 and o.flags.c_contiguous and codes.dtype == np.int64
          and vecs.dtype == lo.dtype == hi.dtype == np.float32 and vecs.flags.c_contiguous
          and vecs.shape == (len(codes), period) and lo.shape == hi.shape == (len(codes),) and period > 0
          and channels > 0 and period % channels == 0 and n % channels == 0
          and (res is None or (res.ndim == 2 and res.shape[0] * channels == n and 0 < rc <= channels
                               and res.dtype == np.float32 and res.flags.c_contiguous))
          and (res is not None or 2 not in codes))
    if not ok:
        raise ValueError(f"epilogue_steps: inconsistent program (out {o.shape} {o.dtype}, codes {list(codes)}, "
                         f"vecs {vecs.shape}, period {period}, channels {channels}, residual "
                         f"{None if res is None else res.shape})")
    return Task(lib, "task_epilogue", o, res if res is not None else o, n, codes, len(codes), vecs, lo, hi, period,
                channels, rc)


def _runs(a: np.ndarray) -> tuple[list[int], list[int]] | None:
    """A float32 array of at most 4 dimensions, contiguous along the last, as a 3-D grid of
    runs: (d0, d1, d2, run length) and the grid's strides in elements; None otherwise."""
    if a.dtype != np.float32 or a.ndim > 4 or any(st % 4 for st in a.strides):
        return None
    shape, strides = [1] * (4 - a.ndim) + list(a.shape), [0] * (4 - a.ndim) + [st // 4 for st in a.strides]
    if shape[3] > 1 and strides[3] != 1:
        return None
    return shape, strides[:3]


def _rows(a: np.ndarray) -> int | None:
    """The row stride in elements of a 2-D float32 array with unit column stride (else None)."""
    grid = _runs(a) if a.ndim == 2 else None
    if grid is None:
        return None
    return grid[1][2] if a.shape[0] > 1 else a.shape[1]


def copy_task(dst: np.ndarray, src: np.ndarray) -> Task | None:
    """The task copying float32 ``src`` into ``dst`` (same shape, at most 4-D, contiguous along
    the last axis: a view of a buffer); None when unavailable or the arrays are not of that form."""
    lib, d, r = _library(), _runs(dst), _runs(src)
    if lib is None or d is None or r is None or dst.shape != src.shape or dst.size == 0:
        return None
    (shape, ds), rs = d, r[1]
    while shape[2] > 1 and ds[2] == rs[2] == shape[3]:  # whole rows contiguous in both: one longer run
        shape, ds, rs = [1, shape[0], shape[1], shape[2] * shape[3]], [0, ds[0], ds[1]], [0, rs[0], rs[1]]
    return Task(lib, "task_copy_f32", dst, src, *shape, *ds, *rs)


def fill_task(dst: np.ndarray, value: float) -> Task | None:
    """The task setting float32 ``dst`` (at most 4-D, contiguous along the last axis) to
    ``value``; None when unavailable or ``dst`` is not of that form."""
    lib, d = _library(), _runs(dst)
    if lib is None or d is None or dst.size == 0:
        return None
    bits = int(np.array(value, np.float32).view(np.uint32))
    return Task(lib, "task_fill_f32", dst, *d[0], *d[1], bits)


def spans(n: int, parts: int) -> list[tuple[int, int]]:
    """``range(n)`` cut into ``parts`` consecutive (start, end) spans of nearly equal length,
    empty ones left out."""
    cuts = [n * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def copy_chunks(copies: list[tuple[np.ndarray, np.ndarray]], fills: list[np.ndarray], fill: float,
                parts: int) -> list[list[Task]] | None:
    """Tasks doing ``np.copyto(dst, src)`` for each pair of 4-D (N, rows, W, C) arrays, split
    by rows into up to ``parts`` chunks, and filling each of ``fills`` with ``fill`` (first
    chunk); None unless every piece has a compiled task."""
    chunks: list[list[Task]] = [[] for _ in range(max(1, parts))]
    for dst, src in copies:
        rows = dst.shape[1] if dst.ndim == 4 else 0
        if rows == 0 or src.shape != dst.shape:
            return None
        for chunk, (a, b) in zip(chunks, spans(rows, len(chunks)), strict=False):
            task = copy_task(dst[:, a:b], src[:, a:b])
            if task is None:
                return None
            chunk.append(task)
    for view in fills:
        task = fill_task(view, fill)
        if task is None:
            return None
        chunks[0].append(task)
    return [c for c in chunks if c]


def gemm_task(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Task | None:
    """The task computing ``c = a @ b`` in float32 through numpy's own BLAS (its CBLAS sgemm,
    on the calling thread); ``b`` may be a transposed view. None when unavailable (compiled
    loops off, no CBLAS sgemm found) or an array has no unit inner stride."""
    lib, sgemm = _library(), blas.sgemm()
    if lib is None or sgemm is None:
        return None
    addr, ilp64 = sgemm
    m, k = a.shape
    n = b.shape[1]
    lda, ldc = _rows(a), _rows(c)
    if b.shape[0] != k or c.shape != (m, n) or lda is None or ldc is None or b.dtype != np.float32:
        return None
    if m == 1 or n == 1:  # numpy's matmul calls gemv then, whose sums differ in the last bits
        return None
    if b.strides[1] == 4:
        trans, ldb = 0, (b.strides[0] // 4 if k > 1 else n)
    elif b.strides[0] == 4:  # a transposed view: BLAS reads the (N, K) matrix it shows
        trans, ldb = 1, b.strides[1] // 4
    else:
        return None
    if ldb < (k if trans else n) or lda < k or ldc < n:
        return None
    return Task(lib, "task_gemm_f32", addr, int(ilp64), trans, m, n, k, a, lda, b, ldb, c, ldc)


def upsample2x_program(src: np.ndarray, cols: np.ndarray, out: np.ndarray, threads: int) -> Program | None:
    """Bilinear 2x upsampling with half-pixel centres of the (N, H, W, C) float32 ``src`` into
    ``out`` (N, 2H, 2W, C) through the scratch ``cols`` (N, H, 2W, C): columns, then rows, each
    stage split by rows over ``threads``. None when unavailable."""
    lib = _library()
    n, h, w, c = src.shape
    ok = (src.dtype == cols.dtype == out.dtype == np.float32 and all(a.flags.c_contiguous for a in (src, cols, out))
          and cols.shape == (n, h, 2 * w, c) and out.shape == (n, 2 * h, 2 * w, c) and h > 1 and w > 1)
    if lib is None or not ok:
        return None
    rows, flat_src, flat_cols = n * h, src.reshape(n * h, w * c), cols.reshape(n * h, 2 * w * c)
    first = [[[Task(lib, "task_up2_cols", flat_src[a:], flat_cols[a:], b - a, w, c)]] * threads
             for a, b in spans(rows, threads)]
    second = [[[Task(lib, "task_up2_rows", cols[b], out[b], h, 2 * w * c, k0, k1)]] * threads
              for b in range(n) for k0, k1 in spans(h, threads)]
    return Program(lib, [first, second])


def indirection(x: np.ndarray, win, zero: np.ndarray, group: int = GROUP, order=None) -> np.ndarray:
    """The (N*OH*OW, T) table of a window op over the C-contiguous (N, H, W, C) float32 ``x``:
    for each output pixel and filter tap (T = KH*KW padded to a multiple of ``group``),
    the address of the C values it reads, or ``zero``'s where it falls in the padding (and for
    the padding taps). ``win`` is the op's :class:`~gpulite.backends.cpu.window.Window`;
    ``order`` lists the taps (i*KW + j) in the order to sum them (default: row-major)."""
    n, h, w, c = x.shape
    if not (x.dtype == zero.dtype == np.float32 and x.flags.c_contiguous and zero.size >= c and x.size > 0):
        raise ValueError(f"indirection: needs a C-contiguous float32 input and a zero vector of {c} (got "
                         f"{x.dtype} {x.shape}, zero {zero.size})")
    iy = (np.arange(win.oh) * win.sh)[:, None] + (np.arange(win.kh) * win.dh)[None, :] - win.pad_t  # (OH, KH)
    ix = (np.arange(win.ow) * win.sw)[:, None] + (np.arange(win.kw) * win.dw)[None, :] - win.pad_l  # (OW, KW)
    inside = ((iy >= 0) & (iy < h))[:, None, :, None] & ((ix >= 0) & (ix < w))[None, :, None, :]
    pix = iy[:, None, :, None] * w + ix[None, :, None, :]  # (OH, OW, KH, KW) pixel index within an image
    base = x.ctypes.data + (np.arange(n) * (h * w * c * 4))[:, None, None, None, None]
    addr = np.where(inside[None], base + pix[None] * (c * 4), zero.ctypes.data).reshape(n * win.oh * win.ow, -1)
    if order is not None:
        if sorted(order) != list(range(addr.shape[1])):
            raise ValueError(f"indirection: tap order {list(order)} is not a permutation of {addr.shape[1]} taps")
        addr = addr[:, list(order)]
    taps = addr.shape[1]
    table = np.full((addr.shape[0], -(-taps // group) * group), zero.ctypes.data, np.int64)
    table[:, :taps] = addr
    return table


def depthwise_ind(table: np.ndarray, wt: np.ndarray, bt: np.ndarray, out: np.ndarray, keep: list,
                  pixels: np.ndarray | None = None) -> Task | None:
    """The task computing output pixels from the rows of an :func:`indirection` table, taps'
    weights ``wt`` (T, C) and bias ``bt`` (C,): all of ``out`` ((pixels, C) float32,
    C-contiguous) in order, or with ``pixels`` (one index into ``out``'s rows per table row)
    those. ``keep`` holds what the table points into. None when unavailable."""
    lib = _library()
    if lib is None:
        return None
    npix, c = (out.shape[0] if pixels is None else len(pixels)), out.shape[1]
    ok = (table.dtype == np.int64 and table.ndim == 2 and table.shape[0] == npix and table.shape[1] % GROUP == 0
          and table.flags.c_contiguous and wt.shape == (table.shape[1], c) and bt.shape == (c,)
          and wt.dtype == bt.dtype == out.dtype == np.float32 and wt.flags.c_contiguous and out.flags.c_contiguous
          and (pixels is None or (len(pixels) > 0 and 0 <= int(pixels.min()) and int(pixels.max()) < out.shape[0])))
    if not ok:
        raise ValueError(f"depthwise_ind: inconsistent plan (table {table.shape}, weights {wt.shape}, out {out.shape})")
    outs = 0 if pixels is None else out.ctypes.data + np.asarray(pixels, np.int64) * (c * 4)
    task = Task(lib, "task_depthwise_ind_f32", table, table.shape[1], wt, bt, out, outs, npix, c)
    task.keep.extend(keep)
    return task


def maxpool_ind(table: np.ndarray, out: np.ndarray, keep: list) -> Task | None:
    """The task writing output pixels ``out`` ((pixels, C) float32, C-contiguous) as the max
    over the taps of an :func:`indirection` table's rows (same pixels); ``keep`` holds what
    the table points into. None when unavailable."""
    lib = _library()
    if lib is None:
        return None
    npix, c = out.shape
    if not (table.dtype == np.int64 and table.ndim == 2 and table.shape[0] == npix and table.shape[1] > 0
            and table.flags.c_contiguous and out.dtype == np.float32 and out.flags.c_contiguous):
        raise ValueError(f"maxpool_ind: inconsistent plan (table {table.shape}, out {out.shape} {out.dtype})")
    task = Task(lib, "task_maxpool_ind_f32", table, table.shape[1], out, npix, c)
    task.keep.extend(keep)
    return task


def bilinear_task(src: np.ndarray, matrix: np.ndarray, out: np.ndarray) -> Task | None:
    """The task running MediaPipe's TransformTensorBilinear v2 (``loops.c``, ``task_bilinear_f32``)
    from float32 ``src`` (1, H, W, C) through ``matrix`` (16 floats) into ``out`` (1, OH, OW, C);
    None when unavailable or an array is not C-contiguous float32."""
    lib = _library()
    arrays = (src, matrix, out)
    if (lib is None or any(a.dtype != np.float32 or not a.flags.c_contiguous for a in arrays)
            or src.ndim != 4 or out.ndim != 4 or matrix.size != 16 or src.shape[3] != out.shape[3]):
        return None
    _, h, w, c = src.shape
    zero = np.zeros(c, np.float32)  # what a corner outside the input reads
    return Task(lib, "task_bilinear_f32", src, matrix, out, h, w, c, out.shape[1], out.shape[2], zero)


def _f64_bits(v: float) -> int:
    """``v`` as a double's bits in an int64 (how a task takes a double argument)."""
    return int(np.array(v, np.float64).view(np.int64))


def _f32_contiguous(*arrays: np.ndarray) -> bool:
    return all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


def landmarks_matrix_task(landmarks: np.ndarray, subset: np.ndarray, left: int, right: int, out: np.ndarray,
                          target: float, half: tuple[float, float], rel_scale: tuple[float, float]) -> Task | None:
    """The task running MediaPipe's Landmarks2TransformMatrix v2 (``loops.c``,
    ``task_landmarks_matrix_f32``): float32 ``landmarks`` (N x 3) and int64 ``subset`` (every
    index < N, as ``left`` and ``right``: checked by the kernel) into ``out`` (16 floats); None
    when unavailable or an array is not C-contiguous float32."""
    lib = _library()
    if lib is None or not _f32_contiguous(landmarks, out) or out.size != 16 or subset.dtype != np.int64:
        return None
    subset = np.ascontiguousarray(subset)
    return Task(lib, "task_landmarks_matrix_f32", landmarks, subset, subset.size, left, right, out,
                _f64_bits(target), _f64_bits(half[0]), _f64_bits(half[1]), _f64_bits(rel_scale[0]),
                _f64_bits(rel_scale[1]))


def transform_landmarks_task(landmarks: np.ndarray, matrix: np.ndarray, out: np.ndarray) -> Task | None:
    """The task running MediaPipe's TransformLandmarks v2 (``loops.c``, ``task_transform_landmarks_f32``)
    from float32 ``landmarks`` (1, N, D), D 2 or 3, through ``matrix`` (16 floats) into ``out``
    (``landmarks``' shape); None when unavailable or an array is not C-contiguous float32."""
    lib = _library()
    if (lib is None or not _f32_contiguous(landmarks, matrix, out) or matrix.size != 16 or landmarks.ndim != 3
            or landmarks.shape[2] not in (2, 3) or out.shape != landmarks.shape):
        return None
    return Task(lib, "task_transform_landmarks_f32", landmarks, matrix, out, landmarks.shape[1], landmarks.shape[2])
