"""Stride phases of a padded input, so every filter tap reads contiguous rows.

Output pixel (y, x) of tap (i, j) reads padded input pixel (y*sh + i*dh, x*sw + j*dw).
Splitting the padded columns into their ``sw`` stride phases (phase b holds the columns
congruent to b) turns the column into phase column x + j*dw//sw: stride 1 within the
phase, so a tap's view of an output row is OW*C contiguous values. The taps that share a
phase form a regular grid of offsets, which one strided view covers.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu import jit
from gpulite.backends.cpu.window import SHARE_MIN_BYTES, Window


def _phase_copy(size: int, pad: int, phase: int, stride: int, length: int) -> tuple[slice, slice] | None:
    """(destination, source) slices along one axis filling phase ``phase`` from the input."""
    u0 = max(0, -((phase - pad) // stride))  # first u with u*stride + phase - pad >= 0
    u1 = min(length, (size - 1 + pad - phase) // stride + 1)
    if u1 <= u0:
        return None
    start = u0 * stride + phase - pad
    return slice(u0, u1), slice(start, start + (u1 - u0 - 1) * stride + 1, stride)


class PhaseInput:
    """The padded input split into its column stride phases, channels repeated M times.

    ``buf[p, n]`` is column phase ``p`` of image ``n`` as (rows, wq, C*M): padded rows as
    they are (a tap reads output row y from padded row ``y*row_step + i*dh``) and phase
    columns, wq = OW + the largest tap column offset. Splitting columns makes each output
    row of a tap contiguous; rows need no split (a row stride is free), which keeps the
    taps of a phase one grid: stride 2 needs two views, not four. The border keeps
    ``fill`` (written once); :meth:`refresh` copies the current input in. With ``pool``
    (the executable's :class:`~gpulite.backends.cpu.backend.ScratchPool`) the buffer is
    shared by every such kernel and :meth:`refresh` writes the border again first (small
    buffers stay private: refilling their border would cost more than the memory). A stride-1,
    unpadded, M = 1 op in the input's dtype uses the input itself: no copy at all.
    ``groups`` lists per phase its taps: ``(p, taps_i, taps_j, (row offset, col offset),
    (row step, col step))``.
    """

    def __init__(self, x: np.ndarray, win: Window, mult: int, fill, dtype, pool=None) -> None:
        rows = (win.oh - 1) * win.sh + (win.kh - 1) * win.dh + 1
        self.row_step, self.wq = win.sh, win.ow + ((win.kw - 1) * win.dw) // win.sw
        phases = sorted({(j * win.dw) % win.sw for j in range(win.kw)})
        self.groups, self.copies, self.borders, self.fill = [], [], [], fill
        ii = list(range(win.kh))
        for p, pw in enumerate(phases):
            jj = [j for j in range(win.kw) if (j * win.dw) % win.sw == pw]
            ox = [j * win.dw // win.sw for j in jj]
            self.groups.append((p, ii, jj, (0, ox[0]), (win.dh, ox[1] - ox[0] if len(ox) > 1 else 0)))
        if (len(phases) == 1 and mult == 1 and not win.padded and np.dtype(dtype) == x.dtype
                and x.shape[1:3] == (rows, self.wq) and x.flags.c_contiguous):
            self.buf = x[None]  # stride 1, no padding: the taps read the input directly
            return
        shape = (len(phases), win.n, rows, self.wq, win.c * mult)
        shared = pool is not None and int(np.prod(shape)) * np.dtype(dtype).itemsize >= SHARE_MIN_BYTES
        if not shared:
            self.buf = np.full(shape, fill, dtype)
        else:  # memory shared with other kernels: the border is written again at every refresh
            self.buf = pool.get(("phases",), shape, dtype)
        r = _phase_copy(win.h, win.pad_t, 0, 1, rows)
        for p, pw in enumerate(phases):
            c = _phase_copy(win.w, win.pad_l, pw, win.sw, self.wq)
            if r is not None and c is not None:
                dst = self.buf[p, :, r[0], c[0], :]
                if mult > 1:  # each input channel feeds M outputs: repeat it while copying
                    dst = dst.reshape((*dst.shape[:3], win.c, mult))
                src = x[(*(slice(None), r[1], c[1], slice(None)), *((None,) if mult > 1 else ()))]
                self.copies.append((dst, src))
                rs, cs = r[0], c[0]
                border = [self.buf[p, :, :rs.start], self.buf[p, :, rs.stop:],
                          self.buf[p, :, rs, :cs.start], self.buf[p, :, rs, cs.stop:]]
            else:
                border = [self.buf[p]]
            if shared:  # other kernels write this memory too: rewrite the border each time
                self.borders.extend(b for b in border if b.size)

    def chunks(self, parts: int):
        """:meth:`refresh` as compiled tasks in up to ``parts`` chunks of rows ([]: nothing to
        do; None: not expressible, see :func:`gpulite.backends.cpu.jit.copy_chunks`)."""
        if not self.copies and not self.borders:
            return []
        return jit.copy_chunks(self.copies, self.borders, self.fill, parts)

    def refresh(self) -> None:
        for b in self.borders:
            b.fill(self.fill)
        for dst, src in self.copies:
            np.copyto(dst, src)
