"""int8 SQUARED_DIFFERENCE, bit-exact with LiteRT's squared_difference.cc, as a table lookup.

Both inputs are shifted left by 7 and rescaled to half the larger input scale, subtracted,
squared in int32, rescaled to the output scale and clamped to int8 (no fused activation).
XNNPACK takes float SQUARED_DIFFERENCE only, so this is the formula LiteRT runs. The factory
evaluates it over all 256 x 256 input pairs; ``run()`` is a lookup (:mod:`.lookup`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import pair_lookup, roll_signed, scale_zp
from gpulite.backends.cpu.quant import multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.graph.shapes import broadcast

_I8 = np.dtype(np.int8)
_LEFT_SHIFT = 7


def squared_difference_multipliers(s1: float, s2: float, so: float) -> tuple[tuple[int, int], ...] | None:
    """The rescales ``((m1, e1), (m2, e2), (m_out, e_out))`` of the inputs (shifted left by 7) and
    of the squared difference, or None when a multiplier is >= 1 (LiteRT's
    ``QuantizeMultiplierSmallerThanOneExp`` aborts there)."""
    twice_max = 2.0 * max(s1, s2)
    reals = (s1 / twice_max, s2 / twice_max, twice_max * twice_max / ((1 << 2 * _LEFT_SHIFT) * so))
    if not all(0.0 < r < 1.0 for r in reals):
        return None
    return tuple(quantize_multiplier(r) for r in reals)


def squared_difference_table(s1: float, z1: int, s2: float, z2: int, so: float, zo: int) -> np.ndarray | None:
    """(256, 256) int8 results indexed by the input values from -128, or None when a multiplier
    is >= 1 (see :func:`squared_difference_multipliers`)."""
    mults = squared_difference_multipliers(s1, s2, so)
    if mults is None:
        return None
    (m1, e1), (m2, e2), (mo, eo) = mults
    vals = np.arange(-128, 128, dtype=np.int64)
    a = multiply_by_quantized_multiplier((vals[:, None] - z1) << _LEFT_SHIFT, m1, e1)
    b = multiply_by_quantized_multiplier((vals[None, :] - z2) << _LEFT_SHIFT, m2, e2)
    diff = a - b
    return np.clip(multiply_by_quantized_multiplier(diff * diff, mo, eo) + zo, -128, 127)


def quantized_squared_difference(node: Node, ctx) -> Callable[[], None]:
    """Factory for int8 SQUARED_DIFFERENCE (per-tensor scales)."""
    ia, ib, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (ia.dtype == ib.dtype == io.dtype == _I8):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized SQUARED_DIFFERENCE takes int8 only "
                                 f"(LiteRT's kernel), got {ia.dtype}, {ib.dtype} -> {io.dtype}")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if broadcast(a.shape, b.shape, node) != out.shape:
        raise ShapeError(f"{where(node)}inputs {list(a.shape)} and {list(b.shape)} do not broadcast to output "
                         f"{list(out.shape)}")
    (s1, z1), (s2, z2), (so, zo) = scale_zp(node, ia), scale_zp(node, ib), scale_zp(node, io)
    table = squared_difference_table(s1, z1, s2, z2, so, zo)
    if table is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"scales {s1}, {s2} -> {so} give a rescale "
                                 "multiplier >= 1, which LiteRT's kernel cannot represent either")
    flat = roll_signed(table.astype(_I8), _I8, (0, 1)).reshape(-1)
    return pair_lookup(np.ascontiguousarray(flat), a.view(np.uint8), b.view(np.uint8), out, None)
