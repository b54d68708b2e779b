"""Elementwise binary math ops from a table, op -> in-place numpy expression (the unary ones
and the other binary ones are in :mod:`.math_ops`).

Binary ops broadcast numpy-style (TFLite's rules are the same) and ADD/SUB/MUL/DIV apply
their fused activation in place afterwards. Float32 is the main path; plain (unquantized)
int32/int64 tensors run through the same ufuncs where numpy's integer meaning is TFLite's.
Quantized int8/uint8 ADD/SUB/MUL are handed to :mod:`.quantized_elementwise`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.kernels.broadcast_tile import tile_operand
from gpulite.backends.cpu.kernels.lookup import is_quantized
from gpulite.backends.cpu.kernels.quantized_elementwise import QUANTIZED_BINARY
from gpulite.backends.cpu.kernels.quantized_int16 import int16_binary
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast
from gpulite.model.opdefs import Op

Binary = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def _squared_difference(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.subtract(a, b, out=out)
    np.square(out, out=out)


BINARY: dict[str, Binary] = {
    Op.ADD: lambda a, b, out: np.add(a, b, out=out),
    Op.SUB: lambda a, b, out: np.subtract(a, b, out=out),
    Op.MUL: lambda a, b, out: np.multiply(a, b, out=out),
    Op.DIV: lambda a, b, out: np.divide(a, b, out=out),
    Op.MAXIMUM: lambda a, b, out: np.maximum(a, b, out=out),
    Op.MINIMUM: lambda a, b, out: np.minimum(a, b, out=out),
    Op.SQUARED_DIFFERENCE: _squared_difference,
}
# Integer tensors: DIV is left out (C truncates, numpy floors) and the quantized
# MAXIMUM/MINIMUM compare raw values exactly as TFLite does (same scale required there).
_INT_BINARY = {Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM, Op.SQUARED_DIFFERENCE}
_RAW_QUANT_BINARY = {Op.MAXIMUM, Op.MINIMUM}
_INT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_FLOAT = np.dtype(np.float32)


def check_broadcast(node: Node, a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> None:
    """Raise ShapeError unless ``a`` and ``b`` broadcast to exactly ``out``."""
    got = broadcast(a, b, node)
    if got != tuple(out):
        raise ShapeError(f"node {node.index} ({node.op}): inputs {list(a)} and {list(b)} broadcast to "
                         f"{list(got)}, but the output is {list(out)}")


def _check_dtypes(node: Node, ctx, supported: bool) -> None:
    a, b, o = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (a.dtype == b.dtype == o.dtype):
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"inputs and output must share a dtype, got {a.dtype}, {b.dtype} -> {o.dtype}")
    if not supported:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"dtype {a.dtype} is not supported")


def binary_kernel(node: Node, ctx) -> Callable[[], None]:
    """Factory for the binary ops in :data:`BINARY` (float32; int32/int64; quantized via table).

    Parameters
    ----------
    node : Node
        The op's node; ``node.activation`` is applied in place after the op.
    ctx : CpuContext
        Gives the two input arrays and the preallocated output.

    Returns
    -------
    Callable[[], None]
        Writes the result into the output array.
    """
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    dt = ctx.in_info(0).dtype
    if is_quantized(ctx.in_info(0)) and node.op in QUANTIZED_BINARY:
        return QUANTIZED_BINARY[node.op](node, ctx)
    if dt == np.int16 and node.op in (Op.ADD, Op.SUB, Op.MUL) and ctx.in_info(0).quant is not None:
        return int16_binary(node, ctx)
    if dt == np.int16 and node.op == Op.DIV and ctx.in_info(0).quant is not None:
        return QUANTIZED_BINARY[Op.DIV](node, ctx)
    raw_ok = node.op in _RAW_QUANT_BINARY and dt in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
    _check_dtypes(node, ctx, dt == _FLOAT or (dt in _INT_DTYPES and node.op in _INT_BINARY) or raw_ok)
    check_broadcast(node, a.shape, b.shape, out.shape)
    # LiteRT turns a fused activation into a clamp range (CalculateActivationRange), which
    # TANH and SIGN_BIT do not have: they are silently ignored there, so here too.
    fn = BINARY[node.op]
    act = clamp_fn(node.activation, dt)
    av, bv, out_v, refresh = row_views(a, b, out, ctx.const(0) is not None, ctx.const(1) is not None)

    def run() -> None:
        if refresh is not None:
            refresh()
        fn(av, bv, out_v)
        if act is not None:
            act(out)
    return run


def row_views(a: np.ndarray, b: np.ndarray, out: np.ndarray, a_const: bool, b_const: bool):
    """Operands for a faster loop when one of them is a small broadcast (see broadcast_tile.py).

    Returns
    -------
    (a', b', out', refresh)
        Row views of the full-size operand and the output with the small operand's tile, and
        the tile's ``refresh`` (None for a constant); or the arrays unchanged and None.
    """
    if out.flags.c_contiguous:
        for big, small, small_const in ((a, b, b_const), (b, a, a_const)):
            if big.shape == out.shape and small.size < out.size and big.flags.c_contiguous:
                t = tile_operand(out.shape, small, small_const)
                if t is not None:
                    rows, out_rows = big.reshape(t.rows), out.reshape(t.rows)
                    pair = (rows, t.tile) if big is a else (t.tile, rows)
                    return (*pair, out_rows, t.refresh)
    return a, b, out, None


for _op in BINARY:
    register_kernel(_op, "cpu", binary_kernel)
