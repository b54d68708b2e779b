"""Table-lookup kernels shared by the 8-bit ops: ``out = table[input bits]``.

An 8-bit input has 256 values (a pair of them 65,536), so any per-element integer formula
can be evaluated once over every value in the factory and ``run()`` reduced to
``np.take``. Tables are indexed by the inputs' unsigned bit patterns (a ``uint8``/``uint16``
view), so signed inputs need their table rolled by half its length.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Node, TensorInfo

_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))
_SHIFT = np.intp(8)


def is_quantized(t: TensorInfo) -> bool:
    """True for an int8/uint8 tensor carrying affine quantization."""
    return t.dtype in _EIGHT_BIT and t.quant is not None and t.quant.scale.size > 0


def qparams(t: TensorInfo) -> tuple[float, int] | None:
    """``(scale, zero_point)`` of a quantized tensor (the first, if per channel); None unquantized."""
    q = t.quant
    if q is None or q.scale.size == 0:
        return None
    return float(q.scale[0]), int(q.zero_point[0])


def scale_zp(node: Node, t: TensorInfo) -> tuple[float, int]:
    """``(scale, zero_point)`` of a per-tensor quantized tensor; UnsupportedOpError otherwise."""
    if t.quant is None or t.quant.scale.size != 1:
        got = "none" if t.quant is None else f"{t.quant.scale.size} scales"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"needs per-tensor quantization on "
                                 f"tensor {t.index} ({t.name!r}), got {got}")
    return float(np.float32(t.quant.scale[0])), int(t.quant.zero_point[0])


def roll_signed(table: np.ndarray, dtype: np.dtype, axes: tuple[int, ...] = (0,)) -> np.ndarray:
    """Reorder a value-indexed table (entry 0 = the dtype's minimum) to bit-pattern order."""
    if np.dtype(dtype).kind != "i":
        return np.ascontiguousarray(table)
    return np.ascontiguousarray(np.roll(table, [table.shape[a] // 2 for a in axes], axis=axes))


def lookup(lut: np.ndarray, xu: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """``out = lut[xu]`` broadcast to ``out``'s shape, through a preallocated index array."""
    idx = np.empty(out.shape, np.intp)

    def run() -> None:
        np.copyto(idx, xu)
        np.take(lut, idx, out=out, mode="clip")
    return run


def pair_lookup(flat: np.ndarray, au: np.ndarray, bu: np.ndarray, out: np.ndarray,
                pick: np.ndarray | None) -> Callable[[], None]:
    """``out = flat[(a << 8 | b) + pick]`` through a preallocated index array."""
    idx = np.empty(out.shape, np.intp)

    def run() -> None:
        np.left_shift(au, _SHIFT, out=idx)
        np.bitwise_or(idx, bu, out=idx)
        if pick is not None:
            np.add(idx, pick, out=idx)
        np.take(flat, idx, out=out, mode="clip")  # "clip" avoids take's buffered copy of out
    return run


def int_lut(lut_by_value: np.ndarray, ctx, tail_by_value: np.ndarray | None = None,
            block: int = 16) -> Callable[[], None]:
    """Kernel ``out = lut[x]`` for an 8/16-bit input; ``lut_by_value[k]`` is the result for the
    k-th smallest input value (index 0 is the dtype's minimum).

    ``tail_by_value``, when given and different, is used instead for the last
    ``size % block`` elements: LiteRT's NEON loops leave those to a scalar loop that
    rounds differently.
    """
    dt, out = ctx.in_info(0).dtype, ctx.output(0)
    bits = np.dtype(f"u{dt.itemsize}")

    def by_bits(t: np.ndarray) -> np.ndarray:
        return roll_signed(t.astype(out.dtype), dt)
    lut = by_bits(lut_by_value)
    xu = ctx.input(0).view(bits)
    n_tail = out.size % block
    if tail_by_value is None or n_tail == 0 or np.array_equal(tail_by_value, lut_by_value):
        return lookup(lut, xu, out)
    both = np.concatenate([lut, by_bits(tail_by_value)])
    idx = np.empty(out.shape, np.intp)
    tail, offset = idx.reshape(-1)[out.size - n_tail:], np.intp(lut.size)

    def run() -> None:
        np.copyto(idx, xu)
        np.add(tail, offset, out=tail)
        np.take(both, idx, out=out, mode="clip")
    return run
