"""STRIDED_SLICE index resolution, shared by its shape rule and its CPU kernel.

Follows TFLite's ``strided_slice.cc`` (``BuildStridedSliceParams``: ellipsis expansion and
new axes) and ``strided_slice_logic.h`` (``StridedSliceStartForAxis``/``EndForAxis``:
negative indices, clamping, begin/end masks, shrink axes, ``offset``), turning the result
into numpy slices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import Shape, ints, where


@dataclass(frozen=True)
class StridedSlice:
    """A resolved STRIDED_SLICE: view the input as ``effective_shape`` (new axes inserted),
    index it with ``slices``, and reshape the result to ``out_shape`` (shrunk axes dropped)."""

    effective_shape: Shape
    slices: tuple[slice, ...]
    out_shape: Shape


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def resolve_strided_slice(node: Node, in_shape: Shape, begin: np.ndarray | None, end: np.ndarray | None,
                          strides: np.ndarray | None) -> StridedSlice:
    """Resolve STRIDED_SLICE exactly as TFLite's ``BuildStridedSliceParams`` and
    ``StridedSliceStartForAxis``/``StridedSliceEndForAxis`` do: ellipsis expansion, new axes,
    begin/end masks, shrink axes, ``offset`` (end is a size), negative indices and strides."""
    o = node.options
    if begin is None or end is None or strides is None:
        raise ShapeError(f"{where(node)}begin/end/strides are computed at run time; expected constants")
    b, e, st = ints(begin), ints(end), ints(strides)
    n = len(b)
    if not (len(e) == len(st) == n):
        raise ShapeError(f"{where(node)}begin {b}, end {e} and strides {st} must have the same length")
    if 0 in st:
        raise ShapeError(f"{where(node)}strides {st} contain 0")
    bm, em = getattr(o, "begin_mask", 0), getattr(o, "end_mask", 0)
    ellipsis, new_axis = getattr(o, "ellipsis_mask", 0), getattr(o, "new_axis_mask", 0)
    shrink, offset = getattr(o, "shrink_axis_mask", 0), bool(getattr(o, "offset", False))
    if bin(ellipsis).count("1") > 1:
        raise ShapeError(f"{where(node)}ellipsis_mask {ellipsis:#b} has more than one bit set")
    rank = len(in_shape)
    num_add = sum(1 for i in range(n) if not (ellipsis >> i) & 1 and (new_axis >> i) & 1)
    eff_dims = rank + num_add
    if offset and (ellipsis or new_axis or n != rank):
        raise ShapeError(f"{where(node)}offset=True needs one begin/end per input dim and no ellipsis/new axes")
    # Expand the ellipsis over the dims begin/end do not name (TFLite's effective masks).
    eff_ellipsis = eff_new = 0
    ell_start, expanded = eff_dims, 0
    i = 0
    while i < eff_dims:
        if (ellipsis >> i) & 1:
            ell_start = i
            ell_end = max(i + 1, min(i + 1 + num_add + rank - n, eff_dims))
            expanded = ell_end - ell_start - 1
            while i < ell_end:
                eff_ellipsis |= 1 << i
                i += 1
            continue
        if (new_axis >> (i - expanded)) & 1:
            eff_new |= 1 << i
        i += 1
    eff_shape, slices, out_shape = [], [], []
    added_ellipsis = added_axes = 0
    for i in range(eff_dims):
        if (eff_ellipsis >> i) & 1:
            added_ellipsis = max(0, i - ell_start)
            dim = in_shape[i - added_axes]
            eff_shape.append(dim)
            slices.append(slice(None))
            out_shape.append(dim)
            continue
        if (eff_new >> i) & 1:
            eff_shape.append(1)
            slices.append(slice(None))
            out_shape.append(1)
            added_axes += 1
            continue
        dim = in_shape[i - added_axes]
        eff_shape.append(dim)
        if i >= n + expanded:  # dims past the given indices are taken whole
            slices.append(slice(None))
            out_shape.append(dim)
            continue
        k = i - added_ellipsis
        stride = st[k]
        start = b[k] + dim if b[k] < 0 else b[k]
        start = _clamp(start, 0, dim) if stride > 0 else _clamp(start, -1, dim - 1)
        if (bm >> k) & 1:
            start = 0 if stride > 0 else dim - 1
        if (shrink >> k) & 1:
            if not 0 <= start < dim:
                raise ShapeError(f"{where(node)}shrink index {b[k]} is outside dim {i} of size {dim}")
            slices.append(slice(start, start + 1))
            continue
        stop = e[k] + start if offset else e[k]
        stop = stop + dim if stop < 0 else stop
        stop = _clamp(stop, 0, dim) if stride > 0 else _clamp(stop, -1, dim - 1)
        if (em >> k) & 1:
            stop = dim if stride > 0 else -1
        count = max(0, -((start - stop) // stride))  # ceil((stop - start) / stride)
        if offset and count != max(0, -(-e[k] // stride)):
            raise ShapeError(f"{where(node)}offset slice of size {e[k]} from {start} leaves dim {i} of size {dim}")
        out_shape.append(count)
        if count == 0:
            slices.append(slice(0, 0))
        else:
            last = start + stride * (count - 1)
            after = last + (1 if stride > 0 else -1)
            slices.append(slice(start, None if after < 0 else after, stride))
    if eff_dims > 5:
        raise ShapeError(f"{where(node)}{eff_dims}-D effective input; TFLite supports up to 5-D")
    return StridedSlice(tuple(eff_shape), tuple(slices), tuple(out_shape))
