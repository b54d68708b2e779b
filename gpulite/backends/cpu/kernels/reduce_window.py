"""REDUCE_WINDOW (TFLite's deprecated form of StableHLO's reduce_window), as LiteRT's kernel.

Each output element starts at ``init_value`` and folds in its window's elements in row-major
order (windows of constant ``window_shape``, ``window_strides`` and ``window_dilations``, no
padding): one strided view of the input per window tap, folded in tap order, which is the
reference loop's order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.graph.shape_rules.tensor_ops import reduce_window_geometry
from gpulite.model.opdefs import Op
from gpulite.model.schema_gen import ReduceWindowFunction as F

_FOLD = {F.ADD: np.add, F.MUL: np.multiply, F.MINIMUM: np.minimum, F.MAXIMUM: np.maximum,
         F.ALL: np.logical_and, F.ANY: np.logical_or}
_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float32,
                                      np.float64))


@register_kernel(Op.REDUCE_WINDOW, "cpu")
def reduce_window(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Windowed reduction (ADD, MUL, MINIMUM, MAXIMUM, ALL, ANY) from ``init_value``."""
    arity(node, 5)
    x, init, out = ctx.input(0), ctx.input(1), ctx.output(0)
    fold = _FOLD.get(getattr(node.options, "reduce_function", 0))
    if fold is None or x.dtype not in _DTYPES or init.dtype != x.dtype or out.dtype != x.dtype or init.size != 1:
        raise unsupported(node, f"expected a reduce function among ADD, MUL, MINIMUM, MAXIMUM, ALL, ANY and input, "
                          f"scalar init value and output of one type among {', '.join(map(str, _DTYPES))}; got "
                          f"{node.options}, {x.dtype}, {init.dtype} -> {out.dtype}")
    if any(ctx.const(i) is None for i in (2, 3, 4)):
        raise unsupported(node, "window shape, strides and dilations must be constant (LiteRT's kernel checks it)")
    shape, window, strides, dilations = reduce_window_geometry(node, x.shape, *(ctx.const(i) for i in (2, 3, 4)))
    check_out(node, out, shape)
    taps = [x[tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, s, o in zip(tap, dilations, strides, shape,
                                                                                    strict=True))]
            for tap in np.ndindex(*window)] if all(shape) else []

    def run() -> None:
        out.fill(init.reshape(()))
        for view in taps:
            fold(out, view, out=out)
    return run
