"""Index arithmetic of layout ops, shared by their shape rules and their kernels.

Each function resolves one op's parameters (constant inputs and options) into plain
Python values: output shapes, slices, axes. Shape rules call them to compute output
shapes; kernels call them to build the views they copy through, so the two can never
disagree. Everything follows TFLite's kernels (``reshape.cc``, ``slice.cc``, ``pad.cc``,
``reduce.cc``, ...). STRIDED_SLICE, the intricate one, lives in
:mod:`gpulite.graph.strided_slice`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.ir import Node

Shape = tuple[int, ...]


def where(node: Node) -> str:
    """Message prefix naming a node, e.g. ``"node 4 (PAD): "``."""
    return f"node {node.index} ({node.op}): "


def gather_index_error(node: Node, lo: int, hi: int, n: int) -> IndexError:
    """GATHER's run-time index error (every backend raises this one): indices span [lo, hi]."""
    return IndexError(f"{where(node)}gather index out of range: indices span [{lo}, {hi}], expected [0, {n})")


def gather_nd_index_error(node: Node, index: list[int], at: list[int], bounds: list[int]) -> IndexError:
    """GATHER_ND's run-time index error: the first index row out of range, at ``at``."""
    return IndexError(f"{where(node)}gather_nd index {index} at {at} is out of bounds for params dims {bounds}")


def scatter_nd_index_error(node: Node, index: list[int], shape: Sequence[int]) -> IndexError:
    """SCATTER_ND's run-time index error: the first index row whose flat offset (LiteRT checks
    only that) puts its slice outside the output."""
    return IndexError(f"{where(node)}scatter_nd index {index} is outside the output of shape {list(shape)}")


def embedding_index_error(node: Node, index: int, rows: int) -> IndexError:
    """EMBEDDING_LOOKUP's run-time index error: the first id outside the table."""
    return IndexError(f"{where(node)}embedding id {index} is outside the table of {rows} rows")


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
    return (*in_shape[:a], 1, *in_shape[a:])


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


def gather_shape(node: Node, params: Shape, indices: Shape) -> tuple[int, int, Shape]:
    """GATHER's ``(axis, batch_dims, output shape)``: ``params[:axis] + indices[batch_dims:] + params[axis+1:]``,
    the first ``batch_dims`` dims shared by params and indices (negative values count from their ranks)."""
    axis = normalize_axis(getattr(node.options, "axis", 0), len(params), node)
    bd = int(getattr(node.options, "batch_dims", 0))
    bd = bd + len(indices) if bd < 0 else bd
    if not 0 <= bd <= min(axis, len(indices)) or params[:bd] != indices[:bd]:
        raise ShapeError(f"{where(node)}batch_dims {bd} must be in [0, min(axis {axis}, indices rank "
                         f"{len(indices)})] with params {list(params)} and indices {list(indices)} sharing those dims")
    return axis, bd, params[:axis] + indices[bd:] + params[axis + 1:]
