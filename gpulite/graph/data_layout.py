"""Output shapes of the shape and data-movement ops issue 12 added, shared by rules and kernels.

Like :mod:`gpulite.graph.layout`, each function resolves one op's constant inputs and
options into plain Python values, so the shape rule and the CPU kernel (both at allocate)
cannot disagree. An output shape that depends on a tensor computed at run time is a
:class:`ShapeError` naming the node: shapes are static here (run-time shape computations are
folded to constants before, by :mod:`gpulite.graph.resolve`). Semantics follow TFLite's
kernels (``fill.cc``, ``range.cc``, ``split.cc``, ``batch_to_space_nd.cc``, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import ints, normalize_axis, where

Shape = tuple[int, ...]


def const_array(node: Node, value: np.ndarray | None, what: str) -> np.ndarray:
    """A constant integer input, or ShapeError when it is computed at run time."""
    if value is None:
        raise ShapeError(f"{where(node)}{what} is computed at run time; the output shape needs it constant "
                         "(gpulite sizes outputs at allocate, from shapes, not from input data)")
    v = np.asarray(value)
    if v.dtype.kind not in "iu":
        raise ShapeError(f"{where(node)}{what} has dtype {v.dtype}; expected an integer tensor")
    return v


def const_ints(node: Node, value: np.ndarray | None, what: str) -> list[int]:
    """:func:`const_array` as a flat list of ints."""
    return ints(const_array(node, value, what))


def dims_shape(node: Node, value: np.ndarray | None, what: str = "the shape input") -> Shape:
    """FILL / BROADCAST_TO: a 1-D constant of non-negative dims."""
    arr = const_array(node, value, what)
    dims = ints(arr)
    if arr.ndim != 1 or any(d < 0 for d in dims):
        raise ShapeError(f"{where(node)}{what} must be a 1-D tensor of non-negative dims, got {dims}")
    return tuple(dims)


def range_count(node: Node, start, limit, delta) -> int:
    """RANGE's element count, as ``range.cc``'s ``GetSize`` (ShapeError for an empty or endless range)."""
    if delta == 0:
        raise ShapeError(f"{where(node)}delta is 0")
    if not ((start >= limit and delta < 0) or (start <= limit and delta > 0)):
        raise ShapeError(f"{where(node)}start {start}, limit {limit} and delta {delta} give no finite range")
    if isinstance(start, (int, np.integer)):
        return int((abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta)))
    return math.ceil(abs((np.float32(limit) - np.float32(start)) / np.float32(delta)))


def range_shape(node: Node, consts: Sequence[np.ndarray | None]) -> Shape:
    if any(c is None for c in consts[:3]):
        raise ShapeError(f"{where(node)}start, limit and delta are computed at run time; the output shape needs "
                         "them constant (gpulite sizes outputs at allocate, from shapes, not from input data)")
    start, limit, delta = (np.asarray(c).reshape(-1)[0] for c in consts[:3])
    return (range_count(node, start, limit, delta),)


def broadcast_to_shape(node: Node, in_shape: Shape, target: np.ndarray | None) -> Shape:
    shape = dims_shape(node, target)
    if len(in_shape) > len(shape) or any(a not in (1, b) for a, b in zip(in_shape[::-1], shape[::-1], strict=False)):
        raise ShapeError(f"{where(node)}input {list(in_shape)} does not broadcast to {list(shape)}")
    return shape


def pack_shape(node: Node, shapes: Sequence[Shape]) -> Shape:
    first = tuple(shapes[0])
    count = int(getattr(node.options, "values_count", len(shapes)))
    if count != len(shapes) or any(tuple(s) != first for s in shapes):
        raise ShapeError(f"{where(node)}values_count {count} and {len(shapes)} inputs of shapes "
                         f"{[list(s) for s in shapes]}: expected that many inputs of one shape")
    axis = normalize_axis(int(getattr(node.options, "axis", 0)), len(first) + 1, node)
    return (*first[:axis], len(shapes), *first[axis:])


def unpack_shapes(node: Node, in_shape: Shape, n_out: int) -> list[Shape]:
    axis = normalize_axis(int(getattr(node.options, "axis", 0)), len(in_shape), node)
    num = int(getattr(node.options, "num", 0))
    if num != in_shape[axis] or n_out != num:
        raise ShapeError(f"{where(node)}num {num} and {n_out} outputs must both equal dim {axis} "
                         f"of the input {list(in_shape)}")
    return [in_shape[:axis] + in_shape[axis + 1:]] * num


def _axis_scalar(node: Node, value: np.ndarray | None, rank: int) -> int:
    a = const_ints(node, value, "the axis")
    if len(a) != 1:
        raise ShapeError(f"{where(node)}the axis must hold one value, got {a}")
    return normalize_axis(a[0], rank, node)


def split_sizes(node: Node, in_shape: Shape, axis_value, sizes_value, n_out: int) -> tuple[int, list[int]]:
    """SPLIT (``sizes_value`` None: equal parts) and SPLIT_V: ``(axis, sizes)``."""
    axis = _axis_scalar(node, axis_value, len(in_shape))
    dim = in_shape[axis]
    num = int(getattr(node.options, "num_splits", n_out))
    if num != n_out or num < 1:
        raise ShapeError(f"{where(node)}num_splits {num} but {n_out} outputs")
    if node.op == "SPLIT":
        if dim % num:
            raise ShapeError(f"{where(node)}dim {axis} of size {dim} does not split into {num} equal parts")
        return axis, [dim // num] * num
    sizes = const_ints(node, sizes_value, "size_splits")
    if len(sizes) != num or sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ShapeError(f"{where(node)}size_splits {sizes} must have {num} entries >= 0 with at most one -1")
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    if sum(sizes) != dim or min(sizes) < 0:
        raise ShapeError(f"{where(node)}size_splits {sizes} do not add up to dim {axis} of size {dim}")
    return axis, sizes


def tile_shape(node: Node, in_shape: Shape, multiples: np.ndarray | None) -> Shape:
    m = const_ints(node, multiples, "multiples")
    if len(m) != len(in_shape) or min(m, default=0) < 0:
        raise ShapeError(f"{where(node)}multiples {m} must be {len(in_shape)} non-negative values")
    return tuple(d * k for d, k in zip(in_shape, m, strict=True))


def reverse_axes(node: Node, rank: int, axes: np.ndarray | None) -> tuple[int, ...]:
    a = [normalize_axis(x, rank, node) for x in const_ints(node, axes, "the axis")]
    if len(set(a)) != len(a) or (a and sorted(a) != list(range(min(a), max(a) + 1))):
        raise ShapeError(f"{where(node)}axes {a} must be distinct and contiguous (LiteRT's kernel refuses others)")
    return tuple(a)


def gather_nd_shape(node: Node, params: Shape, indices: Shape) -> Shape:
    if len(indices) < 1 or indices[-1] > len(params):
        raise ShapeError(f"{where(node)}indices {list(indices)} must end in a dim of at most the params' rank "
                         f"{len(params)}")
    return tuple(indices[:-1]) + tuple(params[indices[-1]:])


def one_hot_shape(node: Node, indices: Shape, depth: np.ndarray | None) -> tuple[int, Shape]:
    """``(axis, output shape)`` of ONE_HOT."""
    d = const_ints(node, depth, "depth")
    if len(d) != 1 or d[0] < 0:
        raise ShapeError(f"{where(node)}depth must be one non-negative value, got {d}")
    axis = int(getattr(node.options, "axis", -1))
    axis = len(indices) if axis == -1 else normalize_axis(axis, len(indices) + 1, node)
    return axis, (*indices[:axis], d[0], *indices[axis:])


def mirror_pad_amounts(node: Node, in_shape: Shape, pads: np.ndarray | None) -> list[tuple[int, int]]:
    """MIRROR_PAD paddings: REFLECT takes at most dim - 1 on a side, SYMMETRIC at most dim."""
    p = const_array(node, pads, "paddings")
    if p.shape != (len(in_shape), 2) or (p < 0).any():
        raise ShapeError(f"{where(node)}paddings {p.tolist()} must be [{len(in_shape)}, 2] non-negative values")
    out = [(int(a), int(b)) for a, b in p.reshape(-1, 2).tolist()]
    extra = 0 if int(getattr(node.options, "mode", 0)) == 1 else 1
    for d, (a, b) in zip(in_shape, out, strict=True):
        if max(a, b) > d - extra:
            mode = "SYMMETRIC" if extra == 0 else "REFLECT"
            raise ShapeError(f"{where(node)}{mode} paddings {out} exceed what input {list(in_shape)} can mirror")
    return out


def _blocks(node: Node, in_shape: Shape, block: np.ndarray | None, pairs: np.ndarray | None, what: str):
    b = const_ints(node, block, "block_shape")
    p = const_ints(node, pairs, what)
    if len(in_shape) not in (3, 4) or len(b) != len(in_shape) - 2 or len(p) != 2 * len(b) or min(b) < 1 \
            or min(p) < 0:
        raise ShapeError(f"{where(node)}expected a 3-D or 4-D input with block_shape of rank - 2 positive values "
                         f"and [{len(in_shape) - 2}, 2] non-negative {what}; got input {list(in_shape)}, "
                         f"block_shape {b}, {what} {p}")
    return b, [(p[2 * i], p[2 * i + 1]) for i in range(len(b))]


def space_to_batch_shape(node: Node, in_shape: Shape, block, pads) -> tuple[list[int], list[tuple[int, int]], Shape]:
    b, p = _blocks(node, in_shape, block, pads, "paddings")
    spatial = [d + lo + hi for d, (lo, hi) in zip(in_shape[1:1 + len(b)], p, strict=True)]
    if any(s % k for s, k in zip(spatial, b, strict=True)):
        raise ShapeError(f"{where(node)}padded spatial dims {spatial} are not multiples of block_shape {b}")
    out = (in_shape[0] * math.prod(b), *(s // k for s, k in zip(spatial, b, strict=True)), *in_shape[1 + len(b):])
    return b, p, out


def batch_to_space_shape(node: Node, in_shape: Shape, block, crops) -> tuple[list[int], list[tuple[int, int]], Shape]:
    b, c = _blocks(node, in_shape, block, crops, "crops")
    if in_shape[0] % math.prod(b):
        raise ShapeError(f"{where(node)}batch {in_shape[0]} is not a multiple of the block size {math.prod(b)}")
    spatial = [d * k - lo - hi for d, k, (lo, hi) in zip(in_shape[1:1 + len(b)], b, c, strict=True)]
    if min(spatial) < 0:
        raise ShapeError(f"{where(node)}crops {c} remove more than the spatial dims {list(in_shape[1:1 + len(b)])} "
                         f"times block_shape {b}")
    return b, c, (in_shape[0] // math.prod(b), *spatial, *in_shape[1 + len(b):])
