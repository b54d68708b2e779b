"""int8/uint8 ADD, SUB, MUL and SQUARED_DIFFERENCE, bit-exact with LiteRT, as table lookups.

The factory evaluates the integer formula LiteRT would use (see :mod:`.quantized_binary`
for which one runs when) over all 256 x 256 input pairs, and ``run()`` is a lookup at
``(a_bits << 8) | b_bits`` (:mod:`.lookup`). A single constant operand shrinks the
table to 256 entries.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels import quantized_binary as qb
from gpulite.backends.cpu.kernels.lookup import lookup, pair_lookup, roll_signed, scale_zp
from gpulite.backends.cpu.kernels.quantized_div import quantized_div
from gpulite.backends.cpu.kernels.quantized_squared_difference import quantized_squared_difference
from gpulite.backends.cpu.quant import QRANGE
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast
from gpulite.model.opdefs import Op


def _binary_tables(node: Node, s1, z1, s2, z2, so, zo, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """(body table, tail table or None), each (256, 256) indexed by input values from qmin."""
    qmin, qmax = QRANGE[dtype]
    vals = np.arange(qmin, qmax + 1, dtype=np.int64)
    x1, x2, args = vals[:, None], vals[None, :], (s1, z1, s2, z2, so, zo)
    op, act, tail = node.op, node.activation, None
    try:
        if act and act.clamp is None:  # CalculateActivationRangeQuantized refuses TANH and SIGN_BIT
            raise ValueError(act)
        if op == Op.SQUARED_DIFFERENCE:  # no fused activation: the dtype's range
            lo, hi = qmin, qmax
            body = qb.tflite_squared_difference(x1, x2, *args)
        elif qb.xnn_accepts(op, s1, s2, so):
            lo, hi = qb.xnn_activation_range(act, so, zo, dtype)
            body = (qb.xnn_mul if op == Op.MUL else qb.xnn_add)(x1, x2, *args, sub=op == Op.SUB)
        else:
            lo, hi = act.quantized_bounds(so, zo, dtype)
            if op == Op.ADD:
                body = qb.tflite_add_neon(x1, x2, *args, dtype)
                tail = np.clip(qb.tflite_add_scalar(x1, x2, *args, sub=False), lo, hi)
            elif op == Op.SUB:
                body = qb.tflite_add_scalar(x1, x2, *args, sub=True)
            else:
                body = qb.tflite_mul_neon(x1, x2, *args)
                tail = np.clip(qb.tflite_mul(x1, x2, *args), lo, hi)
    except (KeyError, ValueError):
        raise UnsupportedOpError(op, node.index, "cpu", f"fused activation {node.activation} on a "
                                 "quantized output (TFLite has RELU, RELU6, RELU_N1_TO_1 only)") from None
    return np.clip(body, lo, hi), tail


def _binary_factory(node: Node, ctx) -> Callable[[], None]:
    ia, ib, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (ia.dtype == ib.dtype == io.dtype):
        raise UnsupportedOpError(node.op, node.index, "cpu",
                                 f"quantized inputs and output must share a dtype, got "
                                 f"{ia.dtype}, {ib.dtype} -> {io.dtype}")
    if node.op == Op.SQUARED_DIFFERENCE and io.dtype != np.int8:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized {io.dtype}; LiteRT's kernel takes int8")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if broadcast(a.shape, b.shape, node) != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): inputs {list(a.shape)} and {list(b.shape)} "
                         f"do not broadcast to output {list(out.shape)}")
    (s1, z1), (s2, z2), (so, zo) = scale_zp(node, ia), scale_zp(node, ib), scale_zp(node, io)
    body, tail = _binary_tables(node, s1, z1, s2, z2, so, zo, io.dtype)
    au, bu = a.view(np.uint8), b.view(np.uint8)
    if tail is not None and not np.array_equal(tail, body):
        # TFLite's builtin ADD/MUL computes some elements in a NEON loop and others in a scalar loop
        # that rounds differently; a second table and a per-element offset pick the right one.
        scalar_at = qb.builtin_scalar_positions(node.op, a.shape, b.shape, out.shape, io.dtype)
        if scalar_at.all():
            body = tail
        elif scalar_at.any():
            flat = np.concatenate([roll_signed(t.astype(io.dtype), io.dtype, (0, 1)).reshape(-1) for t in (body, tail)])
            pick = np.where(scalar_at, np.intp(1 << 16), np.intp(0)).reshape(out.shape)
            return pair_lookup(flat, au, bu, out, pick)
    table = roll_signed(body.astype(io.dtype), io.dtype, (0, 1))
    const_a, const_b = ctx.const(0), ctx.const(1)
    if const_b is not None and const_b.size == 1:
        return lookup(np.ascontiguousarray(table[:, int(bu.reshape(-1)[0])]), au, out)
    if const_a is not None and const_a.size == 1:
        return lookup(np.ascontiguousarray(table[int(au.reshape(-1)[0]), :]), bu, out)
    return pair_lookup(np.ascontiguousarray(table.reshape(-1)), au, bu, out, None)


QUANTIZED_BINARY: dict[str, Callable[[Node, object], Callable[[], None]]] = {
    op: _binary_factory for op in (Op.ADD, Op.SUB, Op.MUL, Op.SQUARED_DIFFERENCE)
}
QUANTIZED_BINARY[Op.SQUARED_DIFFERENCE] = quantized_squared_difference
QUANTIZED_BINARY[Op.DIV] = quantized_div
