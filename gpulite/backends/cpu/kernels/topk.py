"""TOPK_V2: the ``k`` largest values along the last axis and their indices, as LiteRT's topk_v2.cc.

Values come out in decreasing order; equal values in increasing index order (LiteRT's
``TopContainer`` comparator). ``k`` must be constant (a run-time ``k`` sizes the outputs at
run time).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.graph.shape_rules.detection import scalar_count
from gpulite.model.opdefs import Op

_VALUES = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16, np.int32, np.int64))
_INDICES = tuple(np.dtype(t) for t in (np.int16, np.int32, np.int64))


@register_kernel(Op.TOPK_V2, "cpu")
def topk_v2(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Top ``k`` of each row of the last axis, sorted; ties keep the lower index first."""
    arity(node, 2, 2)
    x, values, indices = ctx.input(0), ctx.output(0), ctx.output(1)
    if x.dtype not in _VALUES or values.dtype != x.dtype or indices.dtype not in _INDICES \
            or ctx.in_info(1).dtype not in _INDICES:
        raise unsupported(node, f"expected values among {', '.join(map(str, _VALUES))} (output of the same type), "
                          f"int16/int32/int64 k and indices; got {x.dtype}, k {ctx.in_info(1).dtype} -> "
                          f"{values.dtype}, {indices.dtype}")
    if ctx.const(1) is None:
        raise unsupported(node, "k is computed at run time, so the outputs' shape depends on the data; gpulite "
                          "needs it constant")
    k = scalar_count(node, ctx.const(1), "k")
    shape = (*x.shape[:-1], k) if x.ndim else None
    if shape is None or k > x.shape[-1]:
        raise unsupported(node, f"k = {k} for an input of shape {list(x.shape)}")
    check_out(node, values, shape)
    check_out(node, indices, shape)
    # A stable ascending sort of a key that reverses the order: -x for floats, ~x for integers
    # (exact for every integer type, unlike negation).
    key: Callable[[np.ndarray], np.ndarray] = np.negative if x.dtype.kind == "f" else np.invert

    def run() -> None:
        order = np.argsort(key(x), axis=-1, kind="stable")[..., :k]
        np.copyto(indices, order, casting="unsafe")
        np.copyto(values, np.take_along_axis(x, order, axis=-1))
    return run
