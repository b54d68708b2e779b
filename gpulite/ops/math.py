"""Elementwise math, activations, matmul, softmax and reductions as eager ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.model import schema_gen as sg
from gpulite.ops import args
from gpulite.ops.dispatch import Const, run
from gpulite.tensor import Tensor

_FLOAT = (np.float32,)


def _binary(op: str, options: Any, a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and isinstance(b, Tensor):
        a = args.as_tensor(a, like=b)
    a = args.as_tensor(a)
    b = args.as_tensor(b, like=a)
    args.same_dtype(a, b, op.lower())
    return run(op, [a, b], options=options)


def add(a: Any, b: Any) -> Tensor:
    """``a + b`` with broadcasting (TF.js ``tf.add``); float32 or int32."""
    return _binary("ADD", sg.AddOptions(), a, b)


def sub(a: Any, b: Any) -> Tensor:
    """``a - b`` with broadcasting (TF.js ``tf.sub``)."""
    return _binary("SUB", sg.SubOptions(), a, b)


def mul(a: Any, b: Any) -> Tensor:
    """``a * b`` with broadcasting (TF.js ``tf.mul``)."""
    return _binary("MUL", sg.MulOptions(), a, b)


def div(a: Any, b: Any) -> Tensor:
    """``a / b`` with broadcasting (TF.js ``tf.div``); float32."""
    return _binary("DIV", sg.DivOptions(), a, b)


def maximum(a: Any, b: Any) -> Tensor:
    """Elementwise maximum with broadcasting (TF.js ``tf.maximum``)."""
    return _binary("MAXIMUM", sg.MaximumMinimumOptions(), a, b)


def minimum(a: Any, b: Any) -> Tensor:
    """Elementwise minimum with broadcasting (TF.js ``tf.minimum``)."""
    return _binary("MINIMUM", sg.MaximumMinimumOptions(), a, b)


def _unary(op: str, x: Any) -> Tensor:
    x = args.as_tensor(x)
    args.require_dtype(x, _FLOAT, op.lower())
    return run(op, [x])


def relu(x: Any) -> Tensor:
    """``max(x, 0)`` (TF.js ``tf.relu``)."""
    return _unary("RELU", x)


def relu6(x: Any) -> Tensor:
    """``min(max(x, 0), 6)`` (TF.js ``tf.relu6``)."""
    return _unary("RELU6", x)


def sigmoid(x: Any) -> Tensor:
    """``1 / (1 + exp(-x))`` (TF.js ``tf.sigmoid``; TFLite LOGISTIC)."""
    return _unary("LOGISTIC", x)


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent (TF.js ``tf.tanh``)."""
    return _unary("TANH", x)


def exp(x: Any) -> Tensor:
    """``e ** x`` (TF.js ``tf.exp``)."""
    return _unary("EXP", x)


def sqrt(x: Any) -> Tensor:
    """Square root (TF.js ``tf.sqrt``)."""
    return _unary("SQRT", x)


def rsqrt(x: Any) -> Tensor:
    """``1 / sqrt(x)`` (TF.js ``tf.rsqrt``)."""
    return _unary("RSQRT", x)


def hard_swish(x: Any) -> Tensor:
    """``x * relu6(x + 3) / 6`` (TFLite HARD_SWISH)."""
    return _unary("HARD_SWISH", x)


def softmax(x: Any, axis: int = -1, *, beta: float = 1.0) -> Tensor:
    """Softmax over the last axis (TF.js ``tf.softmax(logits, dim=-1)``); ``beta`` scales the logits."""
    x = args.as_tensor(x)
    args.require_dtype(x, _FLOAT, "softmax")
    if x.ndim and args.axis(axis, x.ndim) != x.ndim - 1:
        raise ValueError(f"softmax runs over the last axis only (as in TF.js); got axis {axis} of shape {x.shape}")
    return run("SOFTMAX", [x], options=sg.SoftmaxOptions(beta=float(beta)))


def matmul(a: Any, b: Any, *, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """Matrix product over the last two axes, batch axes broadcast (TF.js ``tf.matMul``)."""
    a, b = args.as_tensor(a), args.as_tensor(b)
    if args.validating():
        args.same_dtype(a, b, "matmul")
        if a.ndim < 2 or b.ndim < 2:
            raise ValueError(f"matmul needs tensors of rank >= 2, got {a.shape} and {b.shape}")
        k_a = a.shape[-2] if transpose_a else a.shape[-1]
        k_b = b.shape[-1] if transpose_b else b.shape[-2]
        if k_a != k_b:
            raise ValueError(f"matmul of {a.shape} (transpose_a={transpose_a}) and {b.shape} "
                             f"(transpose_b={transpose_b}): inner dimensions {k_a} and {k_b} differ")
    return run("BATCH_MATMUL", [a, b], options=sg.BatchMatMulOptions(adj_x=bool(transpose_a), adj_y=bool(transpose_b)))


def _axes(axis: Any, rank: int) -> np.ndarray:
    if axis is None:
        return np.arange(rank, dtype=np.int32)
    items = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    return np.array(sorted({args.axis(a, rank) for a in items}), np.int32)


def _reduce(op: str, x: Any, axis: Any, keepdims: bool) -> Tensor:
    x = args.as_tensor(x)
    return run(op, [x, Const(_axes(axis, x.ndim))], options=sg.ReducerOptions(keep_dims=bool(keepdims)))


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (an int, a list, or None for all) (TF.js ``tf.mean``)."""
    return _reduce("MEAN", x, axis, keepdims)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # TF.js's name
    """Sum over ``axis`` (TF.js ``tf.sum``)."""
    return _reduce("SUM", x, axis, keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # TF.js's name
    """Maximum over ``axis`` (TF.js ``tf.max``)."""
    return _reduce("REDUCE_MAX", x, axis, keepdims)


def argmax(x: Any, axis: int = 0) -> Tensor:
    """Index of the maximum along ``axis``, int32 (TF.js ``tf.argMax``; ties give the first index)."""
    x = args.as_tensor(x)
    ax = args.axis(axis, x.ndim)
    return run("ARG_MAX", [x, Const(np.array([ax], np.int32))],
               options=sg.ArgMaxOptions(output_type=int(sg.TensorType.INT32)), out_dtype=np.int32)
