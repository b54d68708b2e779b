"""Sliding-window geometry shared by the conv, depthwise and pooling CPU kernels.

Kernels never loop over pixels: they read each filter tap as one strided view of a
padded copy of the input. The padded buffer is made once per kernel with its border
already filled (zeros, the input zero point, or the lowest float for max pooling); each
invoke only copies the input into its interior, so the border is never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gpulite.backends.cpu import jit
from gpulite.errors import ShapeError
from gpulite.graph.shape_rules.conv import out_size, pad_before_after


@dataclass(frozen=True)
class Window:
    """A 2-D window op over an NHWC input: sizes, strides, dilations and TFLite's padding."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    oh: int
    ow: int
    pad_t: int
    pad_b: int
    pad_l: int
    pad_r: int

    @property
    def padded(self) -> bool:
        return bool(self.pad_t or self.pad_b or self.pad_l or self.pad_r)


def window(x_shape: tuple[int, ...], kh: int, kw: int, options, out_shape: tuple[int, ...] | None = None,
           extra_pads: tuple[int, int, int, int] | None = None) -> Window:
    """Geometry of a window op from its options (``padding``, ``stride_*``, ``dilation_*``).

    Raises ``ShapeError`` when ``out_shape`` (the stored output shape) disagrees with TFLite's
    output size, so a corrupt model fails at ``allocate_tensors``. ``extra_pads`` (top,
    bottom, left, right) are zero pads of a PAD folded into the op (``node.pads``,
    see :mod:`gpulite.graph.fusion`): the op's own geometry is that of the padded
    input, and the window reads the unpadded one with both paddings.
    """
    if extra_pads is not None and len(x_shape) == 4:
        t, b, l_, r = extra_pads
        n, h, w, c = (int(d) for d in x_shape)
        win = window((n, h + t + b, w + l_ + r, c), kh, kw, options, out_shape)
        return replace(win, h=h, w=w, pad_t=win.pad_t + t, pad_b=win.pad_b + b,
                       pad_l=win.pad_l + l_, pad_r=win.pad_r + r)
    if len(x_shape) != 4:
        raise ShapeError(f"window ops need a 4-D NHWC input, got shape {list(x_shape)}")
    n, h, w, c = (int(d) for d in x_shape)
    sh, sw = int(options.stride_h), int(options.stride_w)
    dh, dw = int(getattr(options, "dilation_h_factor", 1)), int(getattr(options, "dilation_w_factor", 1))
    oh, ow = out_size(options.padding, h, kh, sh, dh), out_size(options.padding, w, kw, sw, dw)
    if out_shape is not None and tuple(out_shape[1:3]) != (oh, ow):
        raise ShapeError(f"output spatial size should be {[oh, ow]} for input {list(x_shape)}, "
                         f"filter {[kh, kw]}, stride {[sh, sw]}; the model says {list(out_shape)}")
    pt, pb = pad_before_after(h, kh, sh, dh, oh)
    pl, pr = pad_before_after(w, kw, sw, dw, ow)
    return Window(n, h, w, c, kh, kw, sh, sw, dh, dw, oh, ow, pt, pb, pl, pr)


# Padded buffers at least this big come from the executable's shared ScratchPool (and get
# their border rewritten at every refresh); smaller ones are private, border written once.
SHARE_MIN_BYTES = 1 << 18


class PaddedInput:
    """A preallocated copy of ``x`` with a constant border, or ``x`` itself when unpadded.

    Parameters
    ----------
    x : numpy.ndarray
        The kernel's input array (fixed for the life of the kernel).
    win : Window
        Geometry with the padding to apply.
    fill : scalar
        Value of the border (only written here, once).
    dtype : numpy.dtype, optional
        Buffer dtype when it must differ from the input's (e.g. int32 sums of int8); forces
        a copy even without padding.
    pool : ScratchPool, optional
        Take the buffer (when at least ``SHARE_MIN_BYTES``) from the executable's shared
        scratch; its border is then written again at every :meth:`refresh`.
    """

    def __init__(self, x: np.ndarray, win: Window, fill, dtype=None, pool=None) -> None:
        self.x, self.fill, self.borders = x, fill, []
        widen = dtype is not None and np.dtype(dtype) != x.dtype
        # a strided view (one group's channels of a grouped conv) is copied at every refresh too
        if win.padded or widen or not x.flags.c_contiguous:
            hp, wp = win.h + win.pad_t + win.pad_b, win.w + win.pad_l + win.pad_r
            shape, dt = (win.n, hp, wp, win.c), dtype or x.dtype
            if pool is None or int(np.prod(shape)) * np.dtype(dt).itemsize < SHARE_MIN_BYTES:
                self.buf = np.full(shape, fill, dt)
            else:  # shared memory (see ScratchPool): the border is written again at every refresh
                self.buf = pool.get(("padded",), shape, dt)
                b = self.buf
                rows = slice(win.pad_t, win.pad_t + win.h)
                self.borders = [v for v in (b[:, :win.pad_t], b[:, win.pad_t + win.h:], b[:, rows, :win.pad_l],
                                            b[:, rows, win.pad_l + win.w:]) if v.size]
            self.interior = self.buf[:, win.pad_t:win.pad_t + win.h, win.pad_l:win.pad_l + win.w, :]
        else:
            self.buf, self.interior = x, None

    def chunks(self, parts: int):
        """:meth:`refresh` as compiled tasks in up to ``parts`` chunks of rows ([]: nothing to
        do; None: not expressible, see :func:`gpulite.backends.cpu.jit.copy_chunks`)."""
        if self.interior is None:
            return []
        return jit.copy_chunks([(self.interior, self.x)], self.borders, self.fill, parts)

    def refresh(self) -> None:
        """Copy the current input into the interior (no-op when unpadded)."""
        for b in self.borders:
            b.fill(self.fill)
        if self.interior is not None:
            np.copyto(self.interior, self.x)


def tap_view(buf: np.ndarray, win: Window, i: int, j: int, rows: slice | None = None) -> np.ndarray:
    """The (N, OH, OW, C) view of ``buf`` that filter tap (i, j) reads; optionally only some output rows."""
    r0, r1 = (0, win.oh) if rows is None else (rows.start, rows.stop)
    y0, x0 = i * win.dh + r0 * win.sh, j * win.dw
    sn, sy, sx, sc = buf.strides
    return as_strided(buf[:, y0:, x0:, :], (buf.shape[0], r1 - r0, win.ow, buf.shape[3]),
                      (sn, sy * win.sh, sx * win.sw, sc), writeable=False)


def patches_view(buf: np.ndarray, win: Window, n: int, r0: int, r1: int) -> np.ndarray:
    """The (r1-r0, OW, KH, KW, C) im2col view of batch ``n``'s output rows r0..r1."""
    _sn, sy, sx, sc = buf.strides
    base = buf[n, r0 * win.sh:, :, :]
    return as_strided(base, (r1 - r0, win.ow, win.kh, win.kw, buf.shape[3]),
                      (sy * win.sh, sx * win.sw, sy * win.dh, sx * win.dw, sc), writeable=False)


def tile_count(n: int, c: int, minimum: int) -> int:
    """Smallest T dividing ``n`` with T*c >= ``minimum`` (``n`` if none): how many pixels of
    ``c`` channels a tiled per-channel vector spans so that an inner loop is long enough."""
    return next((t for t in range(1, n + 1) if n % t == 0 and t * c >= minimum), n)


def row_chunks(total: int, per_row: int, budget: int) -> list[tuple[int, int]]:
    """Split ``total`` rows into runs of at most ``budget`` elements (``per_row`` each), ≥ 1 row."""
    step = max(1, budget // max(per_row, 1))
    return [(r, min(total, r + step)) for r in range(0, total, step)]
