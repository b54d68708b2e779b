"""DENSIFY of a constant sparse tensor (TFLite's ``FormatConverter::SparseToDense``).

The sparse encoding walks the dimensions in ``traversal_order``; each level is DENSE
(every index ``0..dense_size``) or SPARSE_CSR (``array_segments``/``array_indices``).
Levels beyond the tensor's rank are block dimensions: ``block_map[k]`` names the original
dimension the k-th block splits. TFLite fills the dense tensor recursively, one element
at a time; here each level expands a table of index rows at once, in the same order, so
row r ends up naming the dense position of the r-th stored value.
"""

from __future__ import annotations

import numpy as np

from gpulite.errors import ModelError
from gpulite.graph.ir import TensorInfo


def densify(t: TensorInfo) -> np.ndarray:
    sp, values, shape = t.sparsity, t.const, tuple(t.shape)
    what = f"tensor {t.index} ({t.name!r})"
    if sp is None or values is None:
        raise ModelError(f"{what}: DENSIFY needs a constant sparse tensor")
    rank, order, bmap, dims = len(shape), sp.traversal_order, sp.block_map, sp.dim_metadata
    if len(order) != len(dims) or len(order) != rank + len(bmap) or sorted(order) != list(range(len(order))):
        raise ModelError(
            f"{what}: sparsity has traversal_order {list(order)}, {len(dims)} dim metadata and block_map "
            f"{list(bmap)} for rank {rank}; these must agree"
        )
    if any(not 0 <= b < rank for b in bmap):
        raise ModelError(f"{what}: block_map {list(bmap)} names a dimension outside rank {rank}")
    block_size = [dims[order.index(rank + k)].dense_size for k in range(len(bmap))]
    # Every level's extent follows from the shape and the block sizes (FormatConverter's
    # blocked shape). Checking DENSE levels against it bounds each expansion below by the
    # tensor's own size, so a corrupted dense_size cannot ask for terabytes of index rows.
    block_of = [1] * rank
    for k, b in enumerate(bmap):
        block_of[b] *= max(block_size[k], 1)
    if any(d < 0 for d in shape) or any(b <= 0 for b in block_size) or any(
            shape[i] % block_of[i] for i in range(rank)):
        raise ModelError(
            f"{what}: block sizes {block_size} on block_map {list(bmap)} do not divide shape {list(shape)}"
        )
    extent = [shape[o] // block_of[o] if o < rank else block_size[o - rank] for o in order]
    for level, d in enumerate(dims):
        if d.format == 0 and d.dense_size != extent[level]:
            raise ModelError(
                f"{what}: level {level} is DENSE with dense_size {d.dense_size}, but shape {list(shape)} "
                f"and block sizes {block_size} make it {extent[level]}"
            )
    values = values.reshape(-1)
    idx = np.zeros((1, 0), np.int64)
    prev = np.zeros(1, np.int64)
    for level, d in enumerate(dims):
        if d.format == 0:
            s = d.dense_size
            if s < 0:
                raise ModelError(f"{what}: level {level} has dense_size {s}")
            idx = np.repeat(idx, s, axis=0)
            col = np.tile(np.arange(s, dtype=np.int64), len(prev))
            prev = np.repeat(prev, s) * s + col
        else:
            seg, ind = d.array_segments, d.array_indices
            if seg is None or ind is None or seg.size == 0:
                raise ModelError(f"{what}: sparse level {level} lacks array_segments/array_indices")
            seg = seg.astype(np.int64)
            if prev.size and (prev.max() + 1 >= seg.size):
                raise ModelError(f"{what}: level {level} segment index {int(prev.max()) + 1} >= {seg.size} segments")
            lo, hi = seg[prev], seg[prev + 1]
            counts = hi - lo
            if (counts < 0).any() or (hi > ind.size).any():
                raise ModelError(f"{what}: level {level} array_segments are not ascending within {ind.size} indices")
            idx = np.repeat(idx, counts, axis=0)
            pos = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
            col = ind.astype(np.int64)[pos]
            prev = pos
        idx = np.concatenate([idx, col[:, None]], axis=1)
    if idx.shape[0] != values.size:
        raise ModelError(f"{what}: sparse metadata addresses {idx.shape[0]} values but {values.size} are stored")
    orig = np.zeros((idx.shape[0], rank), np.int64)
    for level in range(rank):
        orig[:, order[level]] = idx[:, level]
    for level in range(rank, len(order)):
        k = order[level] - rank
        orig[:, bmap[k]] = orig[:, bmap[k]] * block_size[k] + idx[:, level]
    if rank and ((orig < 0).any() or (orig >= np.array(shape)).any()):
        raise ModelError(f"{what}: sparse indices fall outside shape {list(shape)}")
    dense = np.zeros(shape, values.dtype)
    if rank:
        dense[tuple(orig.T)] = values
    return dense
