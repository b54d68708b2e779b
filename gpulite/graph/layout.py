"""Index arithmetic of layout ops, shared by their shape rules and their kernels.

Each function resolves one op's parameters (constant inputs and options) into plain
Python values: output shapes, slices, axes. Shape rules call them to compute output
shapes; kernels call them to build the views they copy through, so the two can never
disagree. Everything follows TFLite's kernels (``reshape.cc``, ``strided_slice.cc``,
``slice.cc``, ``reduce.cc``, ...), including their clamping rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.ir import Node

Shape = tuple[int, ...]
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def where(node: Node) -> str:
    """Message prefix naming a node, e.g. ``"node 4 (PAD): "``."""
    return f"node {node.index} ({node.op}): "


def ints(value: np.ndarray | Sequence[int] | None) -> list[int]:
    """A constant index tensor as a flat list of Python ints."""
    return [] if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def normalize_axis(axis: int, rank: int, node: Node) -> int:
    """Map a possibly negative ``axis`` into ``[0, rank)``."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{where(node)}axis {axis} is out of range for rank {rank}; expected [-{rank}, {rank})")
    return axis % rank if rank else 0


def reshape_shape(node: Node, in_shape: Shape, shape_input: np.ndarray | None, has_shape_input: bool) -> Shape:
    """RESHAPE's output shape: the shape input if it is a constant 1-D vector, else ``new_shape``.

    One ``-1`` is resolved from the element count. A legacy ``[0]`` from the options means
    a scalar, as in TFLite.
    """
    if shape_input is not None and np.asarray(shape_input).ndim == 1:
        target = ints(shape_input)
    else:
        target = list(getattr(node.options, "new_shape", ()) or ())
        if not target and has_shape_input:
            raise ShapeError(f"{where(node)}the new shape is computed at run time and the options carry none")
        if target == [0]:
            target = []
    count = int(np.prod(in_shape, dtype=np.int64))
    if target.count(-1) > 1:
        raise ShapeError(f"{where(node)}new shape {target} has more than one -1")
    known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
    if -1 in target:
        if known == 0 or count % known:
            raise ShapeError(f"{where(node)}cannot reshape {list(in_shape)} ({count} elements) to {target}")
        target[target.index(-1)] = count // known
    if any(d < 0 for d in target) or int(np.prod(target, dtype=np.int64)) != count:
        raise ShapeError(f"{where(node)}cannot reshape {list(in_shape)} ({count} elements) to {target}")
    return tuple(target)


def squeeze_shape(node: Node, in_shape: Shape) -> Shape:
    """SQUEEZE: drop ``squeeze_dims`` (negative allowed), or every size-1 dim when empty."""
    dims = list(getattr(node.options, "squeeze_dims", ()) or ())
    rank = len(in_shape)
    if not dims:
        return tuple(d for d in in_shape if d != 1)
    drop = {normalize_axis(d, rank, node) for d in dims}
    for d in drop:
        if in_shape[d] != 1:
            raise ShapeError(f"{where(node)}cannot squeeze dim {d} of {list(in_shape)}: expected size 1")
    return tuple(s for i, s in enumerate(in_shape) if i not in drop)


def expand_dims_shape(node: Node, in_shape: Shape, axis_input: np.ndarray | None) -> Shape:
    """EXPAND_DIMS: insert a 1 at ``axis`` in ``[-(rank+1), rank]``."""
    axis = ints(axis_input)
    if len(axis) != 1:
        raise ShapeError(f"{where(node)}expected one constant axis, got {axis or 'a run-time value'}")
    rank = len(in_shape)
    a = normalize_axis(axis[0], rank + 1, node)
    return tuple(in_shape[:a]) + (1,) + tuple(in_shape[a:])


def pad_amounts(node: Node, in_shape: Shape, pads: np.ndarray | None) -> list[tuple[int, int]]:
    """PAD/PADV2 paddings as ``[(before, after)]`` per dim, checked non-negative."""
    if pads is None:
        raise ShapeError(f"{where(node)}paddings are computed at run time; expected a constant")
    p = np.asarray(pads)
    if p.shape != (len(in_shape), 2):
        raise ShapeError(f"{where(node)}paddings have shape {list(p.shape)}; expected [{len(in_shape)}, 2]")
    out = [(int(a), int(b)) for a, b in p.tolist()]
    if any(a < 0 or b < 0 for a, b in out):
        raise ShapeError(f"{where(node)}negative paddings {out} are not supported")
    return out


def reduce_axes(node: Node, rank: int, axis_input: np.ndarray | None) -> tuple[int, ...]:
    """Sorted, de-duplicated reduction axes (negative allowed) from the constant axis input."""
    if axis_input is None:
        raise ShapeError(f"{where(node)}the reduction axes are computed at run time; expected a constant")
    return tuple(sorted({normalize_axis(a, rank, node) for a in ints(axis_input)}))


def reduced_shape(in_shape: Shape, axes: tuple[int, ...], keep_dims: bool) -> Shape:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return tuple(d for i, d in enumerate(in_shape) if i not in axes)


def slice_window(node: Node, in_shape: Shape, begin: np.ndarray | None, size: np.ndarray | None) -> tuple[slice, ...]:
    """SLICE: python slices for constant ``begin``/``size`` (``size`` -1 means to the end)."""
    if begin is None or size is None:
        raise ShapeError(f"{where(node)}begin/size are computed at run time; expected constants")
    b, s = ints(begin), ints(size)
    if len(b) != len(in_shape) or len(s) != len(in_shape):
        raise ShapeError(f"{where(node)}begin {b} and size {s} must both have {len(in_shape)} entries")
    out = []
    for d, (lo, n, dim) in enumerate(zip(b, s, in_shape, strict=True)):
        n = dim - lo if n == -1 else n
        if lo < 0 or n < 0 or lo + n > dim:
            raise ShapeError(f"{where(node)}slice [{lo}, {lo}+{n}) is outside dim {d} of size {dim}")
        out.append(slice(lo, lo + n))
    return tuple(out)


@dataclass(frozen=True)
class StridedSlice:
    """A resolved STRIDED_SLICE: view the input as ``effective_shape`` (new axes inserted),
    index it with ``slices``, and reshape the result to ``out_shape`` (shrunk axes dropped)."""

    effective_shape: Shape
    slices: tuple[slice, ...]
    out_shape: Shape


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def strided_slice(node: Node, in_shape: Shape, begin: np.ndarray | None, end: np.ndarray | None,
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
