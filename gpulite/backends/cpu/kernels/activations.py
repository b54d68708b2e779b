"""Activation ops: RELU family, LOGISTIC, TANH, LEAKY_RELU, PRELU, HARD_SWISH.

Float32 is computed in place into the output with no temporaries; the 8-bit quantized
forms (LOGISTIC, TANH, RELU family, HARD_SWISH, LEAKY_RELU, PRELU) come from
:mod:`.quantized_activations`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.fast import clip
from gpulite.backends.cpu.kernels import quantized_activations as qa
from gpulite.backends.cpu.kernels.elementwise import row_views
from gpulite.backends.cpu.kernels.int16_sigmoid import int16_sigmoid
from gpulite.backends.cpu.kernels.lookup import is_quantized
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast
from gpulite.model.opdefs import FusedActivation, Op

Run = Callable[[], None]
_FLOAT = np.dtype(np.float32)
# float32 scalars: np.clip with them is SIMD, np.maximum(x, 0.0) is ~3.5x slower (numpy 2.4).
_ZERO, _HALF, _INF, _NINF = np.float32(0), np.float32(0.5), np.float32(np.inf), np.float32(-np.inf)


def _logistic(x: np.ndarray, out: np.ndarray) -> None:
    # sigmoid(x) = 0.5 * tanh(x / 2) + 0.5: nothing overflows for any x (exp(-x) would below
    # -88.7), and numpy's tanh is SIMD, so this is also ~2.5x faster than 1 / (1 + exp(-x)).
    np.multiply(x, _HALF, out=out)
    np.tanh(out, out=out)
    np.multiply(out, _HALF, out=out)
    np.add(out, _HALF, out=out)


def _clamp(op: Op) -> Callable[[np.ndarray, np.ndarray], None]:
    act = FusedActivation.of_op(op)
    assert act is not None, op
    lo, hi = act.bounds(_FLOAT)
    return lambda x, out: clip(x, lo, hi, out=out)


_CLAMP_OPS = (Op.RELU, Op.RELU6, Op.RELU_N1_TO_1)  # each computes the fused activation of its name
FLOAT_UNARY: dict[str, Callable[[np.ndarray, np.ndarray], None]] = {
    **{op: _clamp(op) for op in _CLAMP_OPS},
    Op.TANH: lambda x, out: np.tanh(x, out=out),
    Op.LOGISTIC: _logistic,
}
_QUANTIZED: dict[str, Callable[[Node, object], Run]] = {
    Op.LOGISTIC: qa.quantized_logistic, Op.TANH: qa.quantized_tanh,
    **dict.fromkeys(_CLAMP_OPS, qa.quantized_relu),
}


def _int16_quantized(info) -> bool:
    """An int16 tensor with a scale (the 16x8 mode), which the table kernels also take."""
    return info.dtype == np.int16 and info.quant is not None and info.quant.scale.size > 0


def _float_io(node: Node, ctx) -> tuple[np.ndarray, np.ndarray]:
    x, out = ctx.input(0), ctx.output(0)
    if ctx.in_info(0).dtype != _FLOAT or ctx.out_info(0).dtype != _FLOAT:
        quantized = " or int8/uint8 quantized" if node.op in _QUANTIZED else ""
        quantized += " (or int16)" if node.op in (Op.RELU, Op.RELU6, Op.LOGISTIC, Op.TANH) else ""
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float32{quantized} only, got "
                                 f"{ctx.in_info(0).dtype} -> {ctx.out_info(0).dtype}")
    if x.shape != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(x.shape)} but output {list(out.shape)}")
    return x, out


def unary_activation(node: Node, ctx) -> Run:
    """Factory for RELU, RELU6, RELU_N1_TO_1, TANH and LOGISTIC (float32 or int8/uint8; RELU,
    RELU6, TANH and LOGISTIC also int16, as LiteRT)."""
    if node.op in (Op.LOGISTIC, Op.TANH) and _int16_quantized(ctx.in_info(0)):
        return int16_sigmoid(node, ctx)
    if is_quantized(ctx.in_info(0)) or (node.op in (Op.RELU, Op.RELU6) and _int16_quantized(ctx.in_info(0))):
        return _QUANTIZED[node.op](node, ctx)
    x, out = _float_io(node, ctx)
    fn = FLOAT_UNARY[node.op]

    def run() -> None:
        fn(x, out)
    return run


def _slope_side(alpha: np.ndarray | float) -> Callable[..., np.ndarray] | None:
    """For ``x >= 0 ? x : alpha * x``: np.maximum when every alpha <= 1 (then the answer is
    max(x, alpha*x)), np.minimum when every alpha >= 1, None when alpha is on both sides."""
    a = np.asarray(alpha, np.float32)
    return np.maximum if (a <= 1).all() else np.minimum if (a >= 1).all() else None


@register_kernel(Op.LEAKY_RELU, "cpu")
def leaky_relu(node: Node, ctx) -> Run:
    """Float32 LEAKY_RELU: ``x > 0 ? x : alpha * x`` with ``alpha`` from LeakyReluOptions."""
    if is_quantized(ctx.in_info(0)) or _int16_quantized(ctx.in_info(0)):
        return qa.quantized_leaky_relu(node, ctx)
    x, out = _float_io(node, ctx)
    alpha = np.float32(getattr(node.options, "alpha", 0.0))
    pick = _slope_side(alpha)

    def run() -> None:
        np.multiply(x, alpha, out=out)
        pick(out, x, out=out)
    return run


@register_kernel(Op.PRELU, "cpu")
def prelu(node: Node, ctx) -> Run:
    """Float32 PRELU: ``x >= 0 ? x : alpha * x``, alpha broadcast against x (e.g. (1, 1, C)); 8-bit and
    int16 (int8 alpha) quantized in :mod:`.quantized_activations`."""
    if is_quantized(ctx.in_info(0)) or _int16_quantized(ctx.in_info(0)):
        return qa.quantized_prelu(node, ctx)
    x, alpha, out = ctx.input(0), ctx.input(1), ctx.output(0)
    dts = {ctx.in_info(0).dtype, ctx.in_info(1).dtype, ctx.out_info(0).dtype}
    if dts != {_FLOAT}:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"float32 only, got {sorted(map(str, dts))}")
    if x.shape != out.shape or broadcast(x.shape, alpha.shape, node) != out.shape:
        raise ShapeError(f"node {node.index} (PRELU): input {list(x.shape)} and alpha {list(alpha.shape)} "
                         f"must broadcast to the input's shape, output is {list(out.shape)}")
    const = ctx.const(1) is not None
    x, alpha, out, refresh = row_views(x, alpha, out, False, const)
    pick = _slope_side(alpha) if const else None
    if pick is not None:
        def run_one_side() -> None:
            np.multiply(x, alpha, out=out)
            pick(out, x, out=out)
        return run_one_side
    # alpha on both sides of 1 (or unknown until run time): min(x, 0) * alpha + max(x, 0), exact
    # because one of the two terms is always zero. A mask with copyto(where=) is ~10x slower.
    neg = np.empty_like(out)

    def run_two_sided() -> None:
        if refresh is not None:
            refresh()
        clip(x, _NINF, _ZERO, out=neg)
        np.multiply(neg, alpha, out=neg)
        clip(x, _ZERO, _INF, out=out)
        np.add(out, neg, out=out)
    return run_two_sided


@register_kernel(Op.HARD_SWISH, "cpu")
def hard_swish(node: Node, ctx) -> Run:
    """Float32 HARD_SWISH: ``x * relu6(x + 3) / 6``; int8/uint8 in :mod:`.quantized_activations`."""
    if is_quantized(ctx.in_info(0)):
        return qa.quantized_hard_swish(node, ctx)
    x, out = _float_io(node, ctx)
    # relu6(x + 3) is built in the output itself; only if the output aliases x is a scratch needed.
    tmp = np.empty_like(out) if np.shares_memory(x, out) else out

    def run() -> None:
        np.add(x, 3.0, out=tmp)
        clip(tmp, 0.0, 6.0, out=tmp)
        np.multiply(tmp, x, out=out)
        np.divide(out, 6.0, out=out)
    return run


for _op in FLOAT_UNARY:
    register_kernel(_op, "cpu", unary_activation)
