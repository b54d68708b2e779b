"""Make a small broadcast operand cheap: tile it into one long row once.

numpy broadcasts ``x (1, 96, 96, 32) * alpha (1, 1, 32)`` with an inner loop of 32 elements,
which runs ~3x slower than a full-length loop. Seen as ``x.reshape(-1, 96 * 32)`` against
alpha tiled 96 times, the same product runs at full speed. :func:`tile_operand` finds that
view: the trailing axes that hold every non-1 axis of the operand, widened until the row
is long, and fills a preallocated tile (once for a constant, each run otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

import numpy as np

MIN_ROW = 4096  # elements per row worth tiling for
MAX_TILE = 1 << 16  # never hold more than this many tiled elements


@dataclass
class Tiled:
    """``big.reshape(rows)`` against ``tile`` equals ``big`` against the original operand."""

    rows: tuple[int, int]
    tile: np.ndarray  # 1-D, length rows[1]
    refresh: Callable[[], None] | None  # copies a runtime operand into the tile; None for constants


def tile_operand(shape: tuple[int, ...], operand: np.ndarray, constant: bool) -> Tiled | None:
    """A row view for ``operand`` broadcast to ``shape``, or None when plain numpy is as good.

    Parameters
    ----------
    shape : tuple of int
        The full (output) shape; the other operand and the output must be C-contiguous.
    operand : numpy.ndarray
        Broadcasts to ``shape``; a single value or an already full-size operand gains nothing.
    constant : bool
        True when ``operand`` never changes, so the tile is filled here and never again.
    """
    nd = len(shape)
    if operand.size in (1, prod(shape)) or operand.ndim > nd:
        return None
    aligned = operand.reshape((1,) * (nd - operand.ndim) + operand.shape)
    first = next(i for i, d in enumerate(aligned.shape) if d != 1)
    row = prod(shape[first:])
    while first > 0 and row < MIN_ROW and row * shape[first - 1] <= MAX_TILE:
        first -= 1
        row *= shape[first]
    if row > MAX_TILE or shape[-1] >= MIN_ROW:
        return None
    src = aligned[(0,) * first]  # drop the leading 1-axes: shape (1.., d.., ) over shape[first:]
    tile = np.empty(row, operand.dtype)
    tile_nd = tile.reshape(shape[first:])
    np.copyto(tile_nd, src)
    refresh = None if constant else (lambda: np.copyto(tile_nd, src))
    return Tiled((-1, row), tile, refresh)
