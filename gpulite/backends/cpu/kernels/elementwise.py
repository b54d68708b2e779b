"""Elementwise math ops from two tables, op -> in-place numpy expression.

Binary ops broadcast numpy-style (TFLite's rules are the same) and ADD/SUB/MUL/DIV apply
their fused activation in place afterwards. Float32 is the main path; plain (unquantized)
int32/int64 tensors run through the same ufuncs where numpy's integer meaning is TFLite's.
Quantized int8/uint8 ADD/SUB/MUL are handed to :mod:`.quantized_elementwise`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.activation import activation_fn
from gpulite.backends.cpu.kernels.quantized_elementwise import QUANTIZED_BINARY, is_quantized
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node

Binary = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
Unary = Callable[[np.ndarray, np.ndarray], None]


def _squared_difference(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.subtract(a, b, out=out)
    np.square(out, out=out)


def _rsqrt(x: np.ndarray, out: np.ndarray) -> None:
    np.sqrt(x, out=out)
    np.divide(1.0, out, out=out)  # TFLite computes 1 / sqrt(x), not a fast approximation


BINARY: dict[str, Binary] = {
    "ADD": lambda a, b, out: np.add(a, b, out=out),
    "SUB": lambda a, b, out: np.subtract(a, b, out=out),
    "MUL": lambda a, b, out: np.multiply(a, b, out=out),
    "DIV": lambda a, b, out: np.divide(a, b, out=out),
    "MAXIMUM": lambda a, b, out: np.maximum(a, b, out=out),
    "MINIMUM": lambda a, b, out: np.minimum(a, b, out=out),
    "SQUARED_DIFFERENCE": _squared_difference,
}
UNARY: dict[str, Unary] = {
    "EXP": lambda x, out: np.exp(x, out=out),
    "SQRT": lambda x, out: np.sqrt(x, out=out),
    "RSQRT": _rsqrt,
}
# Integer tensors: DIV is left out (C truncates, numpy floors) and the quantized
# MAXIMUM/MINIMUM compare raw values exactly as TFLite does (same scale required there).
_INT_BINARY = {"ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"}
_RAW_QUANT_BINARY = {"MAXIMUM", "MINIMUM"}
_INT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_FLOAT = np.dtype(np.float32)


def _check_dtypes(node: Node, ctx, op_fn_ok: bool) -> None:
    a, b, o = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (a.dtype == b.dtype == o.dtype):
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"inputs and output must share a dtype, got {a.dtype}, {b.dtype} -> {o.dtype}")
    if not op_fn_ok:
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
    raw_ok = node.op in _RAW_QUANT_BINARY and dt in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
    _check_dtypes(node, ctx, dt == _FLOAT or (dt in _INT_DTYPES and node.op in _INT_BINARY) or raw_ok)
    if np.broadcast_shapes(a.shape, b.shape) != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): inputs {list(a.shape)} and {list(b.shape)} "
                         f"broadcast to {list(np.broadcast_shapes(a.shape, b.shape))}, output is {list(out.shape)}")
    if node.activation == "TANH" and dt != _FLOAT:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"fused TANH on {dt} tensors")
    fn, act = BINARY[node.op], activation_fn(node.activation)

    def run() -> None:
        fn(a, b, out)
        if act is not None:
            act(out)
    return run


def unary_kernel(node: Node, ctx) -> Callable[[], None]:
    """Factory for the float32 unary ops in :data:`UNARY`."""
    x, out = ctx.input(0), ctx.output(0)
    if ctx.in_info(0).dtype != _FLOAT or ctx.out_info(0).dtype != _FLOAT:
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"float32 only, got {ctx.in_info(0).dtype} -> {ctx.out_info(0).dtype}")
    if x.shape != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(x.shape)} but output {list(out.shape)}")
    fn = UNARY[node.op]

    def run() -> None:
        fn(x, out)
    return run


for _op in BINARY:
    register_kernel(_op, "cpu", binary_kernel)
for _op in UNARY:
    register_kernel(_op, "cpu", unary_kernel)
