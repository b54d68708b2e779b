"""FAKE_QUANT (float32), as LiteRT's reference ``FakeQuant``.

The ``[min, max]`` range is nudged so 0 is on the grid of ``2**num_bits - 1`` steps (quant_min
is 0; LiteRT refuses ``narrow_range`` at run time, so does gpulite); each value is clamped to the nudged range and
snapped to the grid, rounding halves away from zero, all in float32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_F32 = np.float32


def nudged_range(lo: float, hi: float, num_bits: int) -> tuple[np.float32, np.float32, np.float32]:
    """``NudgeQuantizationRange``: (nudged min, nudged max, scale) in float32."""
    qmin, qmax = _F32(0), _F32((1 << num_bits) - 1)
    scale = (_F32(hi) - _F32(lo)) / (qmax - qmin)
    zero_from_min = qmin - _F32(lo) / scale
    zero = qmin if zero_from_min < qmin else qmax if zero_from_min > qmax else _F32(np.floor(zero_from_min + 0.5))
    return (qmin - zero) * scale, (qmax - zero) * scale, scale


def round_half_away(v: np.ndarray) -> np.ndarray:
    """``std::round``: nearest integer, halves away from zero (exact: no ``v + 0.5`` rounding)."""
    t = np.trunc(v)
    return np.where(np.abs(v - t) == _F32(0.5), t + np.sign(v), np.rint(v)).astype(v.dtype)


@register_kernel(Op.FAKE_QUANT, "cpu")
def fake_quant(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Quantize-dequantize each value on the nudged ``[min, max]`` grid."""
    arity(node, 1)
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype != _F32 or out.dtype != _F32:
        raise unsupported(node, f"float32 only (LiteRT's kernel), got {x.dtype} -> {out.dtype}")
    o = node.options
    if not (o.min <= 0.0 <= o.max and o.min < o.max) or not 2 <= o.num_bits <= 16:
        raise unsupported(node, f"expected min <= 0 <= max, min < max and 2 <= num_bits <= 16, got min {o.min}, "
                          f"max {o.max}, num_bits {o.num_bits}")
    if o.narrow_range:
        raise unsupported(node, "narrow_range applies to weights only; LiteRT refuses it at run time too")
    check_out(node, out, x.shape)
    lo, hi, scale = nudged_range(o.min, o.max, o.num_bits)
    inv = _F32(1) / scale

    def run() -> None:
        shifted = np.clip(x, lo, hi) - lo
        np.copyto(out, round_half_away(shifted * inv) * scale + lo)
    return run
