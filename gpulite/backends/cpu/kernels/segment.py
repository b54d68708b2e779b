"""SEGMENT_SUM and UNSORTED_SEGMENT_SUM/PROD/MAX/MIN (float32 or int32), as LiteRT's kernels.

Row ``i`` of the data goes into output row ``segment_ids[i]`` (``segment_ids`` may cover a
prefix of the data's dims). Rows start at the reduction's identity (0, 1, the type's lowest,
its highest), so an empty segment holds it; a negative id is skipped and one >= the number of
segments fails the invoke (UNSORTED_*). Rows are folded in data order (``ufunc.at``), as the
reference loops do; int32 wraps. The output size comes from a constant ``num_segments`` or,
for SEGMENT_SUM, from constant ``segment_ids`` (each 0 or 1 more than the one before).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.tensor_ops import UNSORTED_SEGMENT, segment_count
from gpulite.model.opdefs import Op

_DTYPES = (np.dtype(np.float32), np.dtype(np.int32))
_REDUCE: dict[str, tuple[np.ufunc, Callable[[np.dtype], object]]] = {
    Op.SEGMENT_SUM: (np.add, lambda dt: 0),
    Op.UNSORTED_SEGMENT_SUM: (np.add, lambda dt: 0),
    Op.UNSORTED_SEGMENT_PROD: (np.multiply, lambda dt: 1),
    Op.UNSORTED_SEGMENT_MAX: (np.maximum, lambda dt: np.finfo(dt).min if dt.kind == "f" else np.iinfo(dt).min),
    Op.UNSORTED_SEGMENT_MIN: (np.minimum, lambda dt: np.finfo(dt).max if dt.kind == "f" else np.iinfo(dt).max),
}


def _segment(node: Node, ctx: CpuContext) -> Callable[[], None]:
    sorted_op = node.op == Op.SEGMENT_SUM
    arity(node, 2 if sorted_op else 3)
    data, ids, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if data.dtype not in _DTYPES or out.dtype != data.dtype or ids.dtype != np.int32 or \
            (not sorted_op and ctx.in_info(2).dtype != np.int32):
        raise unsupported(node, f"expected float32 or int32 data (output of the same type) and int32 segment ids "
                          f"and count, got {data.dtype}, {ids.dtype} -> {out.dtype}")
    if sorted_op and ctx.const(1) is None:
        raise unsupported(node, "segment_ids are computed at run time, so the output's shape depends on the data; "
                          "gpulite needs them constant")
    if not sorted_op and ctx.const(2) is None:
        raise unsupported(node, "num_segments is computed at run time, so the output's shape depends on the data; "
                          "gpulite needs it constant")
    rows = segment_count(node, data.shape, ids.shape, ctx.const(1), None if sorted_op else ctx.const(2))
    check_out(node, out, (rows, *data.shape[ids.ndim:]))
    fold, identity = _REDUCE[node.op]
    start = out.dtype.type(identity(out.dtype))
    flat_data = data.reshape(ids.size, -1)
    flat_out = out.reshape(rows, -1)

    def run() -> None:
        v = ids.reshape(-1)
        if v.size and v.max() >= rows:
            raise ShapeError(f"{where(node)}segment id {int(v.max())} at run time, but there are {rows} segments")
        keep = v >= 0
        out.fill(start)
        with np.errstate(over="ignore"):
            fold.at(flat_out, v[keep], flat_data[keep])
    return run


for _op in (Op.SEGMENT_SUM, *UNSORTED_SEGMENT):
    register_kernel(_op, "cpu", _segment)
