"""Index checks on the GPU: a gather whose indices come at run time flags an index out of range
in a few words the executable reads back with the outputs, and ``invoke`` raises the error the
CPU kernel raises (LiteRT fails the invoke too). The kernel reading the indices clamps them
regardless, so nothing outside the tensor is read in the meantime.

One workgroup (``index_check.wgsl``) scans the indices once: the first row out of range (its
raw indices kept for the message), the least and the greatest index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.program import Program, make_program

WG = 256
MAX_INDICES = WG * 1024  # no thread folds more than 1,024 indices (issue 20)
NONE = 0xFFFFFFFF


@dataclass(frozen=True)
class Found:
    """What the check saw in one invoke: the first row with an index out of range, its
    indices, and the least and greatest index over all rows."""

    row: int
    index: list[int]
    lo: int
    hi: int


def index_check(ctx: GpuContext, idx: TensorRef, bounds: Sequence[int],
                error: Callable[[Found], Exception]) -> list[Program]:
    """The program checking ``idx`` (int32 or int64, rows of ``len(bounds)`` indices, index j
    of a row in ``[0, bounds[j])``) at every invoke; ``error(found)`` builds the exception when
    one is out of range. No program for an empty tensor; declines past ``MAX_INDICES``."""
    k = len(bounds)
    if idx.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ctx.unsupported(f"indices of dtype {idx.dtype}")
    if idx.size == 0 or k == 0:
        return []
    if idx.size > MAX_INDICES:
        raise ctx.unsupported(f"{idx.size} run-time indices to check (at most {MAX_INDICES} in one workgroup)")
    iw = idx.dtype.itemsize // 4
    rows = idx.size // k

    def decode(words: np.ndarray) -> Exception | None:
        if int(words[0]) == NONE:
            return None
        index = words[6:6 + k * iw].view(idx.dtype).astype(np.int64).tolist()
        lo, hi = words[2:6].view(np.int64).tolist()
        return error(Found(int(words[0]), index, lo, hi))

    check = ctx.arena.add_check(6 + k * iw, decode)
    params = [("rows", "u32", rows), ("k", "u32", k), ("idx_off", "u32", idx.offset),
              ("bounds_off", "u32", ctx.upload(np.asarray(bounds, np.uint32)).offset),
              ("err_off", "u32", check.offset // 4)]
    return [make_program(f"index check {idx.shape} < {list(bounds)}", "index_check", params, 1, word="u32",
                         groups=True, workgroup_size=WG, reduction_per_thread=-(-rows // WG) * k, IW=str(iw))]
