"""Compiled loops for the CPU backend's hottest kernel (depthwise conv), through numba.

numpy has no fused multiply-add over shifted rows: ``einsum`` sums the taps of a depthwise
conv at about 7 GMAC/s here, while one compiled loop that reads nine shifted rows and
writes the output once runs at about 20. The loops below are that one loop and nothing
more: the geometry (padding, stride phases, depth multiplier, chunks, threads) stays in
numpy (:mod:`gpulite.backends.cpu.kernels.depthwise`), and the kernel's bias, activation
and fused steps still run as numpy per chunk. Offsets are checked in Python before the
first call (:func:`check_rows`); the loops themselves skip bounds checks.

numba is a dependency, but the numpy path stays the reference and the fallback: the
``cpu_jit`` flag (``GPULITE_CPU_JIT=0``) turns the compiled loops off, and without numba
(a platform with no wheel) the backend logs once and uses numpy. Compiled code is cached
on disk by numba (``cache=True``), so only a process's first use pays for compiling.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from gpulite.environment import env

log = logging.getLogger("gpulite.cpu")
GROUP = 9  # taps summed per pass over an output segment; tap lists are padded to a multiple
_lock = threading.Lock()
_kernel = None  # None: not built yet; False: numba unavailable


def _build():
    from numba import njit

    @njit(boundscheck=False, nogil=True, cache=True)
    def depthwise_rows(src, offs, row_stride, wt, bt, out, period):  # pragma: no cover - compiled
        rows, length = out.shape
        for r in range(rows):
            o = out[r]
            base = r * row_stride
            for s in range(0, length, period):
                seg = o[s:s + period]
                k = base + s
                for g in range(0, offs.shape[0], 9):
                    a0 = src[k + offs[g]:k + offs[g] + period]
                    a1 = src[k + offs[g + 1]:k + offs[g + 1] + period]
                    a2 = src[k + offs[g + 2]:k + offs[g + 2] + period]
                    a3 = src[k + offs[g + 3]:k + offs[g + 3] + period]
                    a4 = src[k + offs[g + 4]:k + offs[g + 4] + period]
                    a5 = src[k + offs[g + 5]:k + offs[g + 5] + period]
                    a6 = src[k + offs[g + 6]:k + offs[g + 6] + period]
                    a7 = src[k + offs[g + 7]:k + offs[g + 7] + period]
                    a8 = src[k + offs[g + 8]:k + offs[g + 8] + period]
                    w0, w1, w2, w3, w4 = wt[g], wt[g + 1], wt[g + 2], wt[g + 3], wt[g + 4]
                    w5, w6, w7, w8 = wt[g + 5], wt[g + 6], wt[g + 7], wt[g + 8]
                    if g == 0:
                        for m in range(period):
                            seg[m] = (bt[m] + a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m] + a3[m] * w3[m]
                                      + a4[m] * w4[m] + a5[m] * w5[m] + a6[m] * w6[m] + a7[m] * w7[m]
                                      + a8[m] * w8[m])
                    else:
                        for m in range(period):
                            seg[m] += (a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m] + a3[m] * w3[m]
                                       + a4[m] * w4[m] + a5[m] * w5[m] + a6[m] * w6[m] + a7[m] * w7[m]
                                       + a8[m] * w8[m])

    @njit(boundscheck=False, nogil=True, cache=True)
    def epilogue_steps(o, res, codes, vecs, lo, hi, period):  # pragma: no cover - compiled
        n = o.shape[0]
        zero = np.float32(0.0)
        for b in range(0, n, period):
            seg = o[b:min(n, b + period)]
            r = res[b:min(res.shape[0], b + period)]
            for s in range(codes.shape[0]):
                code, v, a, z = codes[s], vecs[s], lo[s], hi[s]
                if code == 0:  # bias
                    for m in range(seg.shape[0]):
                        seg[m] += v[m]
                elif code == 1:  # clamp (NaN stays NaN, as np.clip)
                    for m in range(seg.shape[0]):
                        x = seg[m]
                        seg[m] = a if x < a else (z if x > z else x)
                elif code == 2:  # residual add
                    for m in range(seg.shape[0]):
                        seg[m] += r[m]
                elif code == 3:  # PReLU with every slope <= 1: max(x, a*x)
                    for m in range(seg.shape[0]):
                        x = seg[m]
                        y = x * v[m]
                        seg[m] = x if x >= y else y
                elif code == 4:  # PReLU with every slope >= 1: min(x, a*x)
                    for m in range(seg.shape[0]):
                        x = seg[m]
                        y = x * v[m]
                        seg[m] = x if x <= y else y
                elif code == 5:  # PReLU: min(x, 0) * a + max(x, 0)
                    for m in range(seg.shape[0]):
                        x = seg[m]
                        neg = x if x < zero else zero
                        pos = x if x > zero else zero
                        seg[m] = neg * v[m] + pos
                else:  # hard swish: x * clip(x + 3, 0, 6) / 6 (lo = 3, hi = 6)
                    for m in range(seg.shape[0]):
                        x = seg[m]
                        t = x + a
                        t = zero if t < zero else (z if t > z else t)
                        seg[m] = (t * x) / z

    @njit(boundscheck=False, nogil=True, cache=True)
    def im2col_rows(src, dst, r0, ow, sh, sw, dh, dw, kh, kw):  # pragma: no cover - compiled
        # flat indices, unsigned so that numba adds no negative-index wraparound (which
        # would keep LLVM from vectorizing the copies)
        c, wp = src.shape[2], src.shape[1]
        sf, df = src.reshape(-1), dst.reshape(-1)
        k = dst.shape[1]
        run = kw * c if dw == 1 else c
        pieces = 1 if dw == 1 else kw
        rows = dst.shape[0] // ow
        for yy in range(rows):
            y = r0 + yy
            for i in range(kh):
                rowbase = (y * sh + i * dh) * wp * c
                for x in range(ow):
                    d0 = (yy * ow + x) * k + i * kw * c
                    for j in range(pieces):
                        s0 = np.uint64(rowbase + (x * sw + j * dw) * c)
                        d1 = np.uint64(d0 + j * c)
                        for m in range(run):
                            df[d1 + np.uint64(m)] = sf[s0 + np.uint64(m)]

    return depthwise_rows, epilogue_steps, im2col_rows


def _kernels():
    """(depthwise_rows, epilogue_steps), or None when ``cpu_jit`` is off or numba is missing."""
    global _kernel
    if not env().get("cpu_jit"):
        return None
    if _kernel is None:
        with _lock:
            if _kernel is None:
                try:
                    _kernel = _build()
                except ImportError as e:
                    log.info("numba is not importable (%s): the CPU backend uses its numpy kernels", e)
                    _kernel = False
    return _kernel or None


def epilogue_steps():
    """The compiled epilogue, or None (see :func:`depthwise_rows`).

    ``epilogue_steps(o, res, codes, vecs, lo, hi, period)`` applies steps ``codes`` (0 bias
    ``vecs[s]``, 1 clamp to [lo, hi], 2 add ``res``, 3/4/5 PReLU with slopes ``vecs[s]``,
    6 hard swish) to the 1-D float32 ``o`` block by block of ``period`` elements (a
    multiple of the channel count, the length of the tiled ``vecs`` rows), each block in
    cache for every step. Each step does the float32 operations of its numpy kernel in
    the same order, so values are identical.
    """
    k = _kernels()
    return None if k is None else k[1]


def im2col_rows():
    """The compiled im2col, or None (see :func:`depthwise_rows`).

    ``im2col_rows(src, dst, r0, ow, sh, sw, dh, dw, kh, kw)`` writes the patches of output
    rows r0.. of one image into the first KH*KW*C columns of the 2-D ``dst`` (one row per
    output pixel, ``ow`` per output row): ``dst[q, (i*kw + j)*C + c] = src[y*sh + i*dh,
    x*sw + j*dw, c]`` for pixel (y, x) = (r0 + q // ow, q % ow) of the padded (H, W, C)
    image ``src``. It replaces numpy's copy from a 5-D strided view, whose inner loop is
    only KW*C long.
    """
    k = _kernels()
    return None if k is None else k[2]


def check_im2col(src: np.ndarray, dst: np.ndarray, r0: int, ow: int, sh: int, sw: int, dh: int, dw: int,
                 kh: int, kw: int) -> None:
    """Raise ``ValueError`` unless an :func:`im2col_rows` call stays inside its arrays."""
    rows = dst.shape[0] // max(ow, 1)
    ok = (src.ndim == 3 and dst.ndim == 2 and src.flags.c_contiguous and dst.strides[1] == dst.itemsize
          and src.dtype == dst.dtype and ow > 0 and dst.shape[0] == rows * ow and rows > 0
          and dst.shape[1] >= kh * kw * src.shape[2] and r0 >= 0
          and (r0 + rows - 1) * sh + (kh - 1) * dh < src.shape[0] and (ow - 1) * sw + (kw - 1) * dw < src.shape[1])
    if not ok:
        raise ValueError(f"im2col_rows: inconsistent plan (src {src.shape}, dst {dst.shape}, rows from {r0}, "
                         f"OW {ow}, filter {kh}x{kw}, stride {sh}x{sw}, dilation {dh}x{dw})")


def depthwise_rows():
    """The compiled row loop, or None when ``cpu_jit`` is off or numba cannot be imported.

    ``depthwise_rows(src, offs, row_stride, wt, bt, out, period)`` sets, for every row r of
    the 2-D ``out`` and every m, ``out[r, m] = bt[m % P] + sum_t src[r*row_stride + offs[t]
    + m] * wt[t, m % P]`` with P = ``period`` (which divides ``out.shape[1]``); ``offs`` has
    a multiple of :data:`GROUP` entries (pad with zero weights). ``src`` is 1-D; all arrays
    share one dtype (float32, or float64 for exact integer sums).
    """
    k = _kernels()
    return None if k is None else k[0]


def check_rows(src: np.ndarray, offs: np.ndarray, row_stride: int, wt: np.ndarray, bt: np.ndarray,
               out: np.ndarray, period: int) -> None:
    """Raise ``ValueError`` unless a :func:`depthwise_rows` call stays inside its arrays."""
    rows, length = out.shape
    ok = (src.ndim == 1 and src.flags.c_contiguous and out.flags.c_contiguous and wt.flags.c_contiguous
          and period > 0 and length % period == 0 and len(offs) % GROUP == 0 and len(offs) > 0
          and wt.shape == (len(offs), period) and bt.shape == (period,)
          and src.dtype == wt.dtype == bt.dtype == out.dtype
          and int(offs.min()) >= 0 and (rows - 1) * row_stride + int(offs.max()) + length <= src.size)
    if not ok:
        raise ValueError(f"depthwise_rows: inconsistent plan (src {src.shape}, {len(offs)} taps, rows of "
                         f"{length} every {row_stride}, period {period}, out {out.shape})")
