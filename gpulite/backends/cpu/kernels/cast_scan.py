"""CAST, CUMSUM, REDUCE_PROD (quantized: reduce.py), REDUCE_ANY and REDUCE_ALL.

CAST is C++'s ``static_cast`` between any two of LiteRT's numeric types (float to integer
truncates toward zero, anything to bool is ``!= 0``, complex to real keeps the real part).
CUMSUM accumulates one element at a time along the constant axis as LiteRT's reference
kernel does (``exclusive`` shifts by one, ``reverse`` runs from the end).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.reduce import quantized_prod
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph import data_layout as dl
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.graph.layout import normalize_axis
from gpulite.model.opdefs import Op

_CAST_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16,
                                           np.uint16, np.int32, np.uint32, np.int64, np.bool_, np.complex64))
_ARITH = tuple(np.dtype(t) for t in (np.float32, np.int32, np.int64))


@register_kernel(Op.CAST, "cpu")
def cast(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Convert every element to the output's dtype."""
    arity(node, 1)
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype not in _CAST_DTYPES or out.dtype not in _CAST_DTYPES:
        raise unsupported(node, f"{x.dtype} -> {out.dtype}; expected two of {', '.join(map(str, _CAST_DTYPES))}")
    check_out(node, out, x.shape)
    src = x.real if x.dtype.kind == "c" and out.dtype.kind != "c" else x

    def run() -> None:
        with np.errstate(invalid="ignore"):  # NaN / out-of-range to int: C++ leaves it undefined too
            np.copyto(out, src, casting="unsafe")
    return run


@register_kernel(Op.CUMSUM, "cpu")
def cumsum(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Running sum along the constant axis (float32, int32, int64)."""
    arity(node, 2)
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype not in _ARITH or out.dtype != x.dtype or ctx.in_info(1).dtype not in (np.int32, np.int64):
        raise unsupported(node, f"expected float32/int32/int64 data, an int32 axis and an output of the data's "
                          f"dtype; got {x.dtype}, {ctx.in_info(1).dtype} axis -> {out.dtype}")
    check_out(node, out, x.shape)
    axes = dl.const_ints(node, ctx.const(1), "the axis")
    if x.ndim == 0 or len(axes) != 1:
        raise unsupported(node, f"expected one axis of an input of rank >= 1, got axis {axes}, rank {x.ndim}")
    axis = normalize_axis(axes[0], x.ndim, node)
    exclusive, reverse = bool(node.options.exclusive), bool(node.options.reverse)
    src, dst = (np.flip(x, axis), np.flip(out, axis)) if reverse else (x, out)
    n = x.shape[axis]

    def part(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
        return a[(slice(None),) * axis + (slice(lo, hi),)]

    if not exclusive:
        def run() -> None:
            np.add.accumulate(src, axis=axis, out=dst)
        return run
    first, rest, head = part(dst, 0, 1), part(dst, 1, n), part(src, 0, n - 1)

    def run_exclusive() -> None:
        first.fill(0)
        if n > 1:
            np.add.accumulate(head, axis=axis, out=rest)
    return run_exclusive


def _reducer(ufunc: np.ufunc, dtypes: tuple[np.dtype, ...], what: str):
    def factory(node: Node, ctx: CpuContext) -> Callable[[], None]:
        if ctx.in_info(0).dtype not in dtypes or (ctx.in_info(0).quant is not None
                                                  and ctx.in_info(0).quant.scale.size):
            raise unsupported(node, f"{ctx.in_info(0).dtype} input; expected {what}")
        arity(node, 2)
        src, out = ctx.input(0), ctx.output(0)
        axes = layout.reduce_axes(node, src.ndim, ctx.const(1))
        check_out(node, out, layout.reduced_shape(src.shape, axes, bool(node.options.keep_dims)), src.dtype)
        outk = out.reshape(layout.reduced_shape(src.shape, axes, True))

        def run() -> None:
            ufunc.reduce(src, axis=axes, out=outk, keepdims=True)
        return run
    return factory


_prod = _reducer(np.multiply, _ARITH, "float32, int32 or int64 (unquantized), or quantized int8/int16")


@register_kernel(Op.REDUCE_PROD, "cpu")
def reduce_prod(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """REDUCE_PROD: quantized int8/int16 as LiteRT (:func:`.reduce.quantized_prod`), else the product."""
    info = ctx.in_info(0)
    if info.dtype in (np.int8, np.int16) and info.quant is not None and info.quant.scale.size:
        return quantized_prod(node, ctx)
    return _prod(node, ctx)
register_kernel(Op.REDUCE_ANY, "cpu", _reducer(np.logical_or, (np.dtype(np.bool_),), "bool"))
register_kernel(Op.REDUCE_ALL, "cpu", _reducer(np.logical_and, (np.dtype(np.bool_),), "bool"))
