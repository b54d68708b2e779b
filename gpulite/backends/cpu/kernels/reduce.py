"""MEAN, SUM, REDUCE_MAX, REDUCE_MIN over constant axes (negative allowed), keep_dims or not.

Reductions write through a keep-dims view of the output made in the factory, so numpy's
``ufunc.reduce(..., out=)`` fills it in place. Integer MEAN truncates toward zero like
TFLite's reference kernel. int8/uint8 MEAN and SUM follow what LiteRT runs (its XNNPACK
path, :func:`_eight_bit_reduce`), int16 TFLite's integer kernels. MAX/MIN on 8-bit tensors
compare codes, which LiteRT allows only when input and output share scale and zero point.
Quantized int8/int16 REDUCE_PROD is here too (:func:`quantized_prod`); the unquantized one is
in cast_scan.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.lookup import qparams
from gpulite.backends.cpu.quant import (
    QRANGE,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
)
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def _setup(node: Node, ctx: CpuContext):
    if ctx.const(1) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "axes are computed at run time; expected a constant")
    src, out = ctx.input(0), ctx.output(0)
    axes = layout.reduce_axes(node, src.ndim, ctx.const(1))
    keep = bool(getattr(node.options, "keep_dims", False))
    expected = layout.reduced_shape(src.shape, axes, keep)
    if out.shape != expected or out.dtype != src.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; reducing {list(src.shape)} "
                         f"{src.dtype} over {list(axes)} gives {list(expected)} {src.dtype}")
    return src, out, axes, out.reshape(layout.reduced_shape(src.shape, axes, True))


def _unsupported(node: Node, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(node.op, node.index, "cpu", why)


def _eight_bit_reduce(src, axes, outk, q_in, q_out, mean: bool) -> Callable[[], None]:
    """int8/uint8 MEAN and SUM as LiteRT runs them (XNNPACK's reduce: the codes summed in int32,
    then its int32 -> quantized convert with the zero points folded into float32 constants):
    ``nearbyint(float32(sum(q)) * inv + zp')``, clamped, with ``inv = float32(s_in / s_out)``
    (MEAN: times ``1 / float32(N)``) and ``zp' = zp_out - float32(N) * zp_in * inv``, every step
    in float32. Checked against ai-edge-litert 2.3 on ties (results of exactly k + 0.5)."""
    f32 = np.float32
    count = int(np.prod([src.shape[a] for a in axes], dtype=np.int64))
    inv = f32(f32(q_in[0]) / f32(q_out[0]))
    if mean:
        inv = f32(inv * f32(f32(1.0) / f32(count)))
    zp = f32(f32(q_out[1]) - f32(f32(f32(count) * f32(q_in[1])) * inv))
    acc = np.empty(outk.shape, np.int32)
    val = np.empty(outk.shape, np.float32)
    info = np.iinfo(src.dtype)

    def run() -> None:
        np.add.reduce(src, axis=axes, dtype=np.int32, out=acc, keepdims=True)
        np.copyto(val, acc, casting="unsafe")  # float32(sum) first, as the C
        np.multiply(val, inv, out=val)
        np.add(val, zp, out=val)
        np.rint(val, out=val)  # nearbyint: half to even
        np.clip(val, info.min, info.max, out=val)
        np.copyto(outk, val, casting="unsafe")
    return run


def _int16_mean(src, axes, outk, q_in, q_out) -> Callable[[], None]:
    """int16 MEAN (16x8 mode) as TFLite's ``reference_integer_ops::Mean``: the multiplier of
    ``s_in / s_out`` is divided by the element count N after shifting it left by
    ``min(floor(log2 N), 32, 31 + shift)`` bits, then ``MultiplyByQuantizedMultiplier`` of
    ``sum(q - zp_in)`` plus the output zero point, clamped (LiteRT's only int16 path)."""
    count = int(np.prod([src.shape[a] for a in axes], dtype=np.int64))
    mult, shift = quantize_multiplier(float(np.float64(np.float32(q_in[0])) / np.float64(np.float32(q_out[0]))))
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    mult, shift = (mult << extra) // count, shift - extra
    acc = np.empty(outk.shape, np.int64)

    def run() -> None:
        np.add.reduce(src, axis=axes, dtype=np.int64, out=acc, keepdims=True)
        res = multiply_by_quantized_multiplier(acc - count * q_in[1], mult, shift) + q_out[1]
        np.copyto(outk, np.clip(res, -32768, 32767), casting="unsafe")
    return run


def _int16_sum(src, axes, outk, q_in, q_out) -> Callable[[], None]:
    """int16 SUM as LiteRT's default kernel (``QuantizedMeanOrSum``, compute_sum):
    ``round_half_away(float32(sum(q)) * (s_in / s_out) + bias) + zp_out`` in float32, with
    ``bias = -zp_in * (s_in / s_out) * N``, clamped. Measured against ai-edge-litert 2.3 on
    exact ties (scale 0.5) and saturating sums; its reference kernel (BUILTIN_REF) returns
    garbage for int16 SUM, so the default kernel is the oracle."""
    scale = np.float32(q_in[0]) / np.float32(q_out[0])
    count = int(np.prod([src.shape[a] for a in axes], dtype=np.int64))
    bias = np.float32(np.float32(-q_in[1]) * scale) * np.float32(count)
    acc = np.empty(outk.shape, np.int64)

    def run() -> None:
        np.add.reduce(src, axis=axes, dtype=np.int64, out=acc, keepdims=True)
        f = acc.astype(np.float32) * scale + bias
        rounded = np.sign(f) * np.floor(np.abs(f.astype(np.float64)) + 0.5)
        np.copyto(outk, np.clip(rounded + q_out[1], -32768, 32767), casting="unsafe")
    return run


def _middle_sum(src: np.ndarray, axes, outk: np.ndarray) -> Callable[[], None] | None:
    """The sum over ``axes`` when they are consecutive, with axes left after them (NHWC's H and
    W: global average pooling) and ``src`` is contiguous: ``ones @ x`` over the (outer, R,
    inner) view, one BLAS call per outer index. numpy's reduce over a middle axis adds the
    rows one by one, C values at a time (186 us for 72x128x16 here, 34 us this way). None otherwise."""
    axes = sorted(axes)
    if (src.dtype != np.float32 or not src.flags.c_contiguous or not axes or axes != list(range(axes[0], axes[-1] + 1))
            or axes[-1] == src.ndim - 1 or src.size == 0):
        return None
    outer = int(np.prod(src.shape[:axes[0]], dtype=np.int64))
    inner = int(np.prod(src.shape[axes[-1] + 1:], dtype=np.int64))
    x = src.reshape(outer, -1, inner)
    ones = np.ones((1, x.shape[1]), np.float32)
    o = outk.reshape(outer, 1, inner)
    if not np.shares_memory(o, outk):
        return None
    return lambda: np.matmul(ones, x, out=o)


@register_kernel(Op.MEAN, "cpu")
def mean(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Mean over the constant axes: float, int32/int64 (truncating) or int8/uint8/int16 (requantized)."""
    src, _, axes, outk = _setup(node, ctx)
    count = int(np.prod([src.shape[a] for a in axes], dtype=np.int64))
    if src.dtype in (np.int8, np.uint8) and qparams(ctx.in_info(0)) is not None:
        return _eight_bit_reduce(src, axes, outk, qparams(ctx.in_info(0)), qparams(ctx.out_info(0)) or (1.0, 0), True)
    if src.dtype == np.int16 and qparams(ctx.in_info(0)) is not None and qparams(ctx.out_info(0)) is not None:
        return _int16_mean(src, axes, outk, qparams(ctx.in_info(0)), qparams(ctx.out_info(0)))
    if src.dtype.kind == "f":
        middle = _middle_sum(src, axes, outk)
        if middle is not None:
            def run_middle() -> None:
                middle()
                np.divide(outk, count, out=outk)
            return run_middle

        def run() -> None:
            np.add.reduce(src, axis=axes, out=outk, keepdims=True)
            np.divide(outk, count, out=outk)
        return run
    if src.dtype in (np.int32, np.int64):
        acc = np.empty(outk.shape, np.int64)
        f64 = np.empty(outk.shape, np.float64)

        def run_int() -> None:
            np.add.reduce(src, axis=axes, dtype=np.int64, out=acc, keepdims=True)
            np.divide(acc, count, out=f64)
            np.trunc(f64, out=f64)  # C++ integer division truncates toward zero
            np.copyto(outk, f64, casting="unsafe")
        return run_int
    raise _unsupported(node, f"{src.dtype} input; expected float32, int32, int64, or int8/uint8/int16 quantized")


@register_kernel(Op.SUM, "cpu")
def sum_(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Sum over the constant axes (float, int32/int64, and 8-bit or int16 requantized)."""
    src, _, axes, outk = _setup(node, ctx)
    q_in, q_out = qparams(ctx.in_info(0)), qparams(ctx.out_info(0))
    if src.dtype in (np.int8, np.uint8) and q_in is not None and q_out is not None:
        return _eight_bit_reduce(src, axes, outk, q_in, q_out, False)
    if src.dtype == np.int16 and q_in is not None and q_out is not None:
        return _int16_sum(src, axes, outk, q_in, q_out)
    if src.dtype.kind != "f" and src.dtype not in (np.int32, np.int64):
        raise _unsupported(node, f"{src.dtype} input; expected float32, int32, int64, 8-bit or int16 quantized")

    def run() -> None:
        np.add.reduce(src, axis=axes, out=outk, keepdims=True)
    return run


def _extreme(ufunc: np.ufunc, initial_of: Callable[[np.dtype], object]):
    def factory(node: Node, ctx: CpuContext) -> Callable[[], None]:
        src, _, axes, outk = _setup(node, ctx)
        # 8-bit codes whose input and output quantizations differ: LiteRT's builtin kernel refuses
        # them, its default (XNNPACK) returns the extreme code as it is, scales ignored; so does gpulite.
        # TFLite's init value for integers (lowest()/max() of the type); for floats -inf/+inf,
        # as LiteRT's default (XNNPACK) path: a row of -inf has the maximum -inf, not -FLT_MAX.
        initial = initial_of(src.dtype)

        def run() -> None:
            ufunc.reduce(src, axis=axes, out=outk, keepdims=True, initial=initial)
        return run
    return factory


def _lowest(dt: np.dtype):
    return -np.inf if dt.kind == "f" else (False if dt.kind == "b" else np.iinfo(dt).min)


def _highest(dt: np.dtype):
    return np.inf if dt.kind == "f" else (True if dt.kind == "b" else np.iinfo(dt).max)


register_kernel(Op.REDUCE_MAX, "cpu", _extreme(np.maximum, _lowest))
register_kernel(Op.REDUCE_MIN, "cpu", _extreme(np.minimum, _highest))


def quantized_prod(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """int8/int16 REDUCE_PROD as LiteRT's ``QuantizedReduceProd``: per output, the first
    ``q - zp_in`` times each next one in input order, every product rescaled by
    ``s_in / s_out ** (1 / N)`` (``GetQuantProdScaling``, in double; N the reduced count) with
    the int64 ``MultiplyByQuantizedMultiplier``, then once more, plus ``zp_out``, clamped."""
    src, out, axes, _ = _setup(node, ctx)
    q_in, q_out = qparams(ctx.in_info(0)), qparams(ctx.out_info(0))
    if src.dtype not in (np.int8, np.int16) or q_in is None or q_out is None:
        raise _unsupported(node, f"quantized REDUCE_PROD takes int8 or int16 in and out, got {src.dtype}")
    kept = [a for a in range(src.ndim) if a not in axes]
    n = int(np.prod([src.shape[a] for a in axes], dtype=np.int64))
    if src.size == 0 or n == 0:
        raise _unsupported(node, "an empty input (LiteRT leaves the output unwritten)")
    order = (*kept, *axes)  # each output's elements in input order: the order LiteRT multiplies them
    mult, shift = quantize_multiplier(q_in[0] / (q_out[0] ** (1.0 / n)))
    lo, hi = QRANGE[np.dtype(src.dtype)]
    flat = out.reshape(-1)

    def run() -> None:
        v = src.transpose(order).reshape(-1, n).astype(np.int64) - q_in[1]
        acc = v[:, 0].copy()
        for j in range(1, n):
            acc = multiply_by_quantized_multiplier_int64(acc * v[:, j], mult, shift)
        res = multiply_by_quantized_multiplier_int64(acc, mult, shift) + q_out[1]
        np.copyto(flat, np.clip(res, lo, hi), casting="unsafe")
    return run
