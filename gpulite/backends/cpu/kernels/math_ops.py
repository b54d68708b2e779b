"""Unary math ops, and the binary ones beyond :mod:`.elementwise`'s table, with LiteRT's semantics.

Unary: EXP, SQRT, RSQRT (``1 / sqrt(x)``, as TFLite computes it), ABS, NEG, SQUARE, SIGN,
FLOOR, CEIL, ROUND (half to even, as TFLite's ``RoundToNearest``), LOG, SIN, COS, ELU, GELU
(``approximate``: the tanh form; otherwise ``0.5 x erfc(-x / sqrt 2)``), LOG_SOFTMAX (last
axis), RELU_0_TO_1. Binary, broadcasting numpy-style: FLOOR_DIV (``floor(a / b)``, integer division by
zero fails the invoke as in LiteRT), FLOOR_MOD (C's ``fmod``/``%`` moved to the divisor's
sign), POW (int32 refuses negative exponents at invoke, as LiteRT does), ATAN2, RIGHT_SHIFT
(arithmetic, the shift clamped to the type's width) and BITWISE_XOR. Each op takes the
dtypes LiteRT's builtin kernel takes; quantized 8-bit EXP, LOG, ELU and GELU run as tables
(:func:`quantized_float_lut`), int8 RSQRT in LiteRT's fixed point and int16 RSQRT as its
interpolated table (:func:`quantized_rsqrt`), int8 / int16 SQRT as LiteRT's float per code
(:func:`quantized_sqrt`; both fail the invoke on a negative input, as LiteRT does), other
quantized tensors are refused at allocate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu import quant
from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels import lookup
from gpulite.backends.cpu.kernels import quantized_activations as qa
from gpulite.backends.cpu.kernels.elementwise import check_broadcast
from gpulite.backends.cpu.kernels.quantized_int16 import int16_float_lut, lut_lookup, populate_int16
from gpulite.backends.cpu.kernels.quantized_l2norm import inv_sqrt_multiplier
from gpulite.backends.cpu.kernels.softmax import quantized_log_softmax
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
I8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
U8, U16, U32 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32))

# Coefficients of erfc(z) = t exp(-z² + P(t)), t = 1 / (1 + z/2), z >= 0 (Numerical Recipes'
# erfcc, relative error below 1.2e-7 everywhere), highest power first for np.polyval.
_ERFC = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
         1.00002368, -1.26551223)


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function in float64 (numpy has none), relative error < 1.2e-7."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    r = t * np.exp(-z * z + np.polyval(_ERFC, t))
    return np.where(x >= 0, r, 2.0 - r)


def _gelu(approximate: bool) -> Callable[[np.ndarray, np.ndarray], None]:
    k = math.sqrt(2.0 / math.pi)

    def gelu(x: np.ndarray, out: np.ndarray) -> None:
        v = x.astype(np.float64)
        if approximate:
            out[...] = 0.5 * v * (1.0 + np.tanh(k * (v + 0.044715 * v ** 3)))
        else:
            out[...] = 0.5 * v * erfc(-v * math.sqrt(0.5))
    return gelu


def _elu(x: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, np.where(x < 0, np.expm1(np.minimum(x, 0)), x))


def _sign(x: np.ndarray, out: np.ndarray) -> None:
    np.subtract(x > 0, x < 0, out=out, dtype=out.dtype)  # (0 < x) - (x < 0): NaN gives 0, as TFLite


def _rsqrt(x: np.ndarray, out: np.ndarray) -> None:
    np.sqrt(x, out=out)
    np.divide(1.0, out, out=out)  # TFLite computes 1 / sqrt(x), not a fast approximation


def _log_softmax(x: np.ndarray, out: np.ndarray) -> None:
    m = x.max(axis=-1, keepdims=True)
    np.subtract(x, m, out=out)
    out -= np.log(np.exp(out).sum(axis=-1, keepdims=True))


def _f64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """A float32 function evaluated in float64 and rounded once (as glibc's expf, logf, ...)."""
    def wrapped(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x.astype(np.float64)).astype(np.float32)
    return wrapped


def _gelu_table_fn(node: Node) -> Callable[[np.ndarray], np.ndarray]:
    gelu = _gelu(bool(getattr(node.options, "approximate", False)))

    def fn(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, np.float32)
        gelu(x, out)
        return out
    return fn


def _log_table_fn(node: Node, ctx) -> Callable[[np.ndarray], np.ndarray]:
    """LogLUTPrepare's function (int8 and int16): log, and the output dtype's least value at or
    below 0 (not the NaN / -inf a plain log gives there)."""
    q, lowest = ctx.out_info(0).quant, np.iinfo(ctx.out_info(0).dtype).min
    least = np.float32(np.float32(lowest - int(q.zero_point[0])) * np.float32(q.scale[0]))
    log = _f64(np.log)
    return lambda v: np.where(v <= 0, least, log(np.maximum(v, np.float32(1e-45)))).astype(np.float32)


# 8-bit ops LiteRT computes by a table over a float function: (function of the node and context,
# rounding of quantized_activations.float_lut, dtypes LiteRT takes), each measured against LiteRT
# 2.3 on every input code (ELU runs in XNNPACK); quantized SQRT and RSQRT are no such tables
# (quantized_sqrt, quantized_rsqrt)
FLOAT_LUT_FUNCTIONS: dict[str, tuple[Callable[[Node, object], Callable[[np.ndarray], np.ndarray]], str,
                                     tuple[np.dtype, ...]]] = {
    Op.EXP: (lambda node, ctx: _f64(np.exp), "away", (I8,)),
    Op.LOG: (_log_table_fn, "away", (I8,)),
    Op.ELU: (lambda node, ctx: _f64(lambda v: np.where(v < 0, np.expm1(np.minimum(v, 0)), v)), "even", (I8,)),
    Op.GELU: (lambda node, ctx: _gelu_table_fn(node), "away", (I8, U8)),
}

# int16 ops LiteRT computes by LUTPopulate<int16_t> (513 interpolated samples): the float function
INT16_LUT_FUNCTIONS: dict[str, Callable[[Node, object], Callable[[np.ndarray], np.ndarray]]] = {
    Op.EXP: lambda node, ctx: _f64(np.exp),
    Op.LOG: _log_table_fn,
    Op.GELU: lambda node, ctx: _gelu_table_fn(node),
}


def quantized_float_lut(node: Node, ctx) -> Callable[[], None]:
    """int8 EXP, LOG, ELU; int8/uint8 GELU: a table over the float function; int16
    EXP, LOG, GELU: LiteRT's interpolated int16 table (:func:`.quantized_int16.int16_float_lut`)."""
    make, rounding, dtypes = FLOAT_LUT_FUNCTIONS[node.op]
    if ctx.in_info(0).dtype == I16 and node.op in INT16_LUT_FUNCTIONS:
        return int16_float_lut(node, ctx, INT16_LUT_FUNCTIONS[node.op](node, ctx))
    if ctx.in_info(0).dtype not in dtypes:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized {ctx.in_info(0).dtype}; LiteRT's kernel "
                                 f"takes {', '.join(map(str, dtypes))}")
    return qa.float_lut(node, ctx, make(node, ctx), None, rounding)


# op -> (dtypes LiteRT's builtin kernel takes, in-place function)
UNARY: dict[str, tuple[tuple[np.dtype, ...], Callable[[np.ndarray, np.ndarray], None]]] = {
    Op.EXP: ((F32,), lambda x, out: np.exp(x, out=out)),
    Op.SQRT: ((F32,), lambda x, out: np.sqrt(x, out=out)),
    Op.RSQRT: ((F32,), _rsqrt),
    Op.ABS: ((F32, I16, I32), lambda x, out: np.abs(x, out=out)),
    Op.NEG: ((F32, I8, I16, I32, I64), lambda x, out: np.negative(x, out=out)),  # integers wrap, as in C
    Op.SQUARE: ((F32,), lambda x, out: np.square(x, out=out)),
    Op.SIGN: ((F32, F64, I32), _sign),
    Op.FLOOR: ((F32,), lambda x, out: np.floor(x, out=out)),
    Op.CEIL: ((F32,), lambda x, out: np.ceil(x, out=out)),
    Op.ROUND: ((F32,), lambda x, out: np.rint(x, out=out)),
    Op.LOG: ((F32,), lambda x, out: np.log(x, out=out)),
    Op.SIN: ((F32,), lambda x, out: np.sin(x, out=out)),
    Op.COS: ((F32,), lambda x, out: np.cos(x, out=out)),
    Op.ELU: ((F32,), _elu),
    Op.LOG_SOFTMAX: ((F32,), _log_softmax),
    Op.RELU_0_TO_1: ((F32,), lambda x, out: np.clip(x, F32.type(0), F32.type(1), out=out)),
}


# Ops whose LiteRT kernels compute on the integer codes of int8/int16 tensors, scales ignored
# (measured with ai-edge-litert 2.3 on every code): NEG negates (wrapping), FLOOR_DIV and
# FLOOR_MOD divide the codes, RIGHT_SHIFT and BITWISE_XOR shift and xor them (uint8 too).
IGNORE_QUANTIZATION = (Op.NEG, Op.FLOOR_DIV, Op.FLOOR_MOD, Op.RIGHT_SHIFT, Op.BITWISE_XOR)


def is_quantized(t) -> bool:
    """An 8- or 16-bit integer tensor with a scale: LiteRT runs the op's quantized path there."""
    return t.dtype.kind in "iu" and t.dtype.itemsize <= 2 and t.quant is not None and t.quant.scale.size > 0


def _names(dtypes) -> str:
    return ", ".join(str(d) for d in dtypes)


def quantized_abs(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """int8 / int16 ABS as LiteRT's ``AbsEvalQuantized``: ``|q - zp_in|``, rescaled by
    ``MultiplyByQuantizedMultiplier`` with the multiplier of the float32 quotient ``s_in / s_out``
    (only when the scales differ), plus ``zp_out``, clamped to the dtype (int16: zero points 0).
    int8 through a table over the 256 codes."""
    xi, oi = ctx.in_info(0), ctx.out_info(0)
    if xi.dtype not in (I8, I16) or oi.dtype != xi.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized ABS takes int8 or int16 in and out "
                                 f"(LiteRT's kernel), got {xi.dtype} -> {oi.dtype}")
    s_in, zp_in = quant.per_tensor(node, xi, "input")
    s_out, zp_out = quant.per_tensor(node, oi, "output")
    if xi.dtype == I16 and (zp_in or zp_out):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 ABS needs zero points 0 (LiteRT's kernel), "
                                 f"got {zp_in} and {zp_out}")
    lo, hi = quant.QRANGE[xi.dtype]
    rescale = np.float32(s_in) != np.float32(s_out)
    mult, shift = quant.quantize_multiplier(float(np.float32(s_in) / np.float32(s_out))) if rescale else (0, 0)

    def codes(q: np.ndarray) -> np.ndarray:
        v = np.abs(q.astype(np.int64) - zp_in)
        if rescale:
            v = quant.multiply_by_quantized_multiplier(v, mult, shift)
        return np.clip(v + zp_out, lo, hi).astype(xi.dtype)

    x, out = ctx.input(0), ctx.output(0)
    if xi.dtype == I8:
        table = codes(np.arange(256, dtype=np.uint8).view(I8))  # indexed by the code's bits

        def run_table() -> None:
            np.take(table, x.view(np.uint8), out=out)
        return run_table

    def run() -> None:
        np.copyto(out, codes(x))
    return run


# Quantized ops whose LiteRT kernel fails the invoke on an input code below the input's zero point
# (a negative real value), with LiteRT's message
DOMAIN_MESSAGES = {Op.RSQRT: "Rsqrt is only defined for positive values",
                   Op.SQRT: "Sqrt is only defined for non-negative values"}


def input_domain(node: Node, info) -> tuple[int, Callable[[int, int, int], ValueError]] | None:
    """The domain of quantized RSQRT or SQRT (``DOMAIN_MESSAGES``): ``(least, error)``, ``least``
    the least input code the op takes (the input's zero point: below it the real value is
    negative, and LiteRT fails the invoke) and ``error(below, size, lowest)`` the exception every
    backend raises when ``below`` of the ``size`` input codes lie under it, the lowest ``lowest``;
    None when ``least`` is the dtype's least code (no input can fail)."""
    zp, scale = int(info.quant.zero_point[0]), float(np.float32(info.quant.scale[0]))
    if zp <= np.iinfo(info.dtype).min:
        return None

    def error(below: int, size: int, lowest: int) -> ValueError:
        return ValueError(f"{layout.where(node)}{DOMAIN_MESSAGES[node.op]} (LiteRT fails the invoke): {below} of "
                          f"{size} input codes are below the input's zero point {zp}, the least {lowest} (real "
                          f"value {(lowest - zp) * scale:.6g})")
    return zp, error


def _checked(node: Node, ctx, table: Callable[[], None]) -> Callable[[], None]:
    """``table`` run after checking the input against :func:`input_domain` (the error raised)."""
    domain = input_domain(node, ctx.in_info(0))
    if domain is None:
        return table
    (least, error), x = domain, ctx.input(0)

    def run() -> None:
        if x.size and x.min() < least:
            raise error(int(np.count_nonzero(x < least)), x.size, int(x.min()))
        table()
    return run


def quantized_sqrt(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """int8 / int16 SQRT as LiteRT's ``SqrtEvalQuantized`` (elementwise.cc), run as a table over
    the codes: ``s_in * (q - zp_in)`` in float32, ``sqrtf``, divided by ``s_out`` in float32,
    truncated (a C cast: x86's ``cvttss2si`` gives INT_MIN past int32's range), plus ``zp_out``,
    clamped; a code below the input's zero point fails the invoke (:func:`input_domain`)."""
    si, zpi, so, zpo, dt = qa.unary_params(node, ctx)
    if dt not in (I8, I16):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized {dt}; LiteRT's kernel takes int8 and int16")
    if dt == I16 and (zpi or zpo):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 SQRT needs zero points 0 (LiteRT fails "
                                 f"at prepare otherwise), got {zpi} and {zpo}")
    info = np.iinfo(dt)
    codes = np.arange(info.min, info.max + 1, dtype=np.int64)
    with np.errstate(all="ignore"):  # codes below zp: NaN, never returned (the invoke fails)
        v = np.sqrt(np.float32(si) * (codes - zpi).astype(np.float32)) / np.float32(so)
        q = np.where(v >= 2.0 ** 31, -2 ** 31, np.trunc(np.nan_to_num(v)).astype(np.float64)).astype(np.int64)
    return _checked(node, ctx, lookup.int_lut(np.clip(q + zpo, info.min, info.max), ctx))


def _rsqrt_int16_fn(s_out: float) -> Callable[[np.ndarray], np.ndarray]:
    """The function LiteRT's int16 RSQRT tabulates: ``1.0f / std::sqrt(v)``, and
    ``32767 * s_out`` (the output's greatest value) at ``v <= 0``."""
    top = np.float32(32767) * np.float32(s_out)
    return lambda v: np.where(v <= 0, top, np.float32(1) / np.sqrt(np.maximum(v, np.float32(0)))).astype(np.float32)


def quantized_rsqrt(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Quantized RSQRT as LiteRT's ``RsqrtEvalQuantizedInt8`` / ``RsqrtEvalQuantizedInt16``
    (elementwise.cc), run as a table over the codes; an input code below the input's zero point
    (a negative real value) fails the invoke (:func:`input_domain`), as in LiteRT.

    int8, in fixed point, not a table over the float function (which rounds some codes a step
    lower): per code, ``v = q - zp_in``; ``GetInvSqrtQuantizedMultiplierExp(v)`` gives
    1 / sqrt(v) as a multiplier and shift, applied to 1 with 20 more bits
    (``MultiplyByQuantizedMultiplier``), then rescaled by the multiplier of
    ``1 / (sqrtf(s_in) * s_out)`` (float32 product, double quotient) with 20 bits less, plus
    ``zp_out``, clamped; ``v == 0`` gives 127.

    int16 (zero points 0, else LiteRT fails at prepare): ``LUTPopulate<int16_t>``'s 513
    interpolated samples of ``1.0f / sqrtf(v)`` (``32767 * s_out`` at ``v <= 0``), looked up as
    TFLite's ``lut_lookup`` (:func:`.quantized_int16.populate_int16`)."""
    si, zpi, so, zpo, dt = qa.unary_params(node, ctx)
    if dt == I16:
        if zpi or zpo:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 RSQRT needs zero points 0 (LiteRT fails "
                                     f"at prepare otherwise), got {zpi} and {zpo}")
        lut = populate_int16(_rsqrt_int16_fn(so), si, 0, so, 0)
        codes = lut_lookup(np.arange(-32768, 32768, dtype=np.int64), lut)
        lo, hi = -32768, 32767
    elif dt == I8:
        multiplier, shift = quant.quantize_multiplier(
            1.0 / float(np.float32(np.sqrt(np.float32(si)) * np.float32(so))))
        v = np.arange(-128, 128, dtype=np.int64) - zpi
        inv, inv_shift = inv_sqrt_multiplier(np.maximum(v, 0))
        data = quant.multiply_by_quantized_multiplier(1, inv, inv_shift + 20)
        codes = quant.multiply_by_quantized_multiplier(data, multiplier, shift - 20) + zpo
        codes = np.where(v == 0, 127, np.where(v < 0, zpo, codes))  # (below zp: never returned)
        lo, hi = -128, 127
    else:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized {dt}; LiteRT's kernel takes int8 and int16")
    return _checked(node, ctx, lookup.int_lut(np.clip(codes, lo, hi), ctx))


def _unary_factory(node: Node, ctx: CpuContext) -> Callable[[], None]:
    if node.op in FLOAT_LUT_FUNCTIONS and is_quantized(ctx.in_info(0)):
        return quantized_float_lut(node, ctx)
    if node.op == Op.RSQRT and is_quantized(ctx.in_info(0)):
        return quantized_rsqrt(node, ctx)
    if node.op == Op.SQRT and is_quantized(ctx.in_info(0)):
        return quantized_sqrt(node, ctx)
    if node.op == Op.ABS and is_quantized(ctx.in_info(0)):
        return quantized_abs(node, ctx)
    if node.op == Op.LOG_SOFTMAX and is_quantized(ctx.in_info(0)):
        return quantized_log_softmax(node, ctx)
    if node.op == Op.RELU_0_TO_1 and is_quantized(ctx.in_info(0)) and ctx.in_info(0).dtype in (I8, U8):
        return qa.quantized_relu(node, ctx)
    if node.op == Op.GELU:
        dtypes, fn = (F32,), _gelu(bool(getattr(node.options, "approximate", False)))
    else:
        dtypes, fn = UNARY[node.op]
    if ctx.num_inputs != 1 or not ctx.has_input(0) or len(node.outputs) != 1:
        raise ShapeError(f"{layout.where(node)}expected 1 input and 1 output, got inputs {list(node.inputs)} "
                         f"and outputs {list(node.outputs)}")
    xi, oi = ctx.in_info(0), ctx.out_info(0)
    if xi.dtype not in dtypes or oi.dtype != xi.dtype or (is_quantized(xi) and node.op not in IGNORE_QUANTIZATION):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input and output must share an unquantized dtype "
                                 f"among {_names(dtypes)} (LiteRT's kernel), got {xi.dtype} -> {oi.dtype}")
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape:
        raise ShapeError(f"{layout.where(node)}input {list(x.shape)} but output {list(out.shape)}")
    if node.op == Op.LOG_SOFTMAX and x.ndim == 0:
        raise ShapeError(f"{layout.where(node)}LOG_SOFTMAX needs an input of rank >= 1, got a scalar")

    def run() -> None:
        with np.errstate(all="ignore"):  # log(0), log(-1): -inf and NaN, as LiteRT gives
            fn(x, out)
    return run


for _op in (*UNARY, Op.GELU):
    register_kernel(_op, "cpu", _unary_factory)


def _floor_div(where: str):
    def fn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        if out.dtype.kind == "f":
            np.divide(a, b, out=out)
            np.floor(out, out=out)  # floor(a / b), not numpy's fmod-based floor_divide
            return
        if not np.all(b):
            raise ZeroDivisionError(f"{where}FLOOR_DIV by zero")
        if out.dtype.itemsize < 4:  # int8 -128 // -1 = 128 saturates to 127, as LiteRT's
            info = np.iinfo(out.dtype)
            np.copyto(out, np.clip(np.floor_divide(a.astype(np.int32), b), info.min, info.max), casting="unsafe")
            return
        np.floor_divide(a, b, out=out)  # integer floor division, as TFLite's
    return fn


def _floor_mod(where: str):
    def fn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        if out.dtype.kind == "f":
            np.fmod(a, b, out=out)
            fix = (out != 0) & ((b < 0) != (out < 0))
            np.add(out, b, out=out, where=fix)
            return
        if not np.all(b):
            raise ZeroDivisionError(f"{where}FLOOR_MOD by zero")
        np.remainder(a, b, out=out)  # integer % moved to the divisor's sign == Python's modulo
    return fn


def _pow(where: str):
    def fn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        if out.dtype.kind != "f" and np.any(b < 0):
            raise ValueError(f"{where}POW of int32 does not take negative exponents (LiteRT refuses them too)")
        np.power(a, b, out=out)
    return fn


def _right_shift(where: str):
    def fn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        # the shift clamped to [0, bits - 1] (right_shift.cc avoids C++'s undefined shifts so)
        np.right_shift(a, np.clip(b, 0, a.dtype.itemsize * 8 - 1).astype(a.dtype), out=out)
    return fn


_BITS = (I8, U8, I16, U16, I32, U32)
BINARY = {
    Op.FLOOR_DIV: ((F32, I8, I16, I32), _floor_div),
    Op.FLOOR_MOD: ((F32, I8, I16, I32, I64), _floor_mod),
    Op.POW: ((F32, I32), _pow),
    Op.ATAN2: ((F32, F64), lambda where: lambda a, b, out: np.arctan2(a, b, out=out)),
    Op.RIGHT_SHIFT: (_BITS, _right_shift),
    Op.BITWISE_XOR: (_BITS, lambda where: lambda a, b, out: np.bitwise_xor(a, b, out=out)),
}


def _binary_factory(node: Node, ctx: CpuContext) -> Callable[[], None]:
    dtypes, make = BINARY[node.op]
    if ctx.num_inputs != 2 or not (ctx.has_input(0) and ctx.has_input(1)) or len(node.outputs) != 1:
        raise ShapeError(f"{layout.where(node)}expected 2 inputs and 1 output, got inputs {list(node.inputs)} "
                         f"and outputs {list(node.outputs)}")
    ai, bi, oi = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if (not (ai.dtype == bi.dtype == oi.dtype) or ai.dtype not in dtypes
            or (is_quantized(ai) and node.op not in IGNORE_QUANTIZATION)):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"inputs and output must share an unquantized dtype "
                                 f"among {_names(dtypes)} (LiteRT's kernel), got {ai.dtype}, {bi.dtype} -> {oi.dtype}")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    check_broadcast(node, a.shape, b.shape, out.shape)
    fn = make(layout.where(node))
    bc = ctx.const(1)
    if bc is not None and out.dtype.kind != "f":
        what = ("exponent", "a negative value", bc < 0) if node.op == Op.POW else ("divisor", "a zero", bc == 0)
        if np.any(what[2]):
            raise UnsupportedOpError(node.op, node.index, "cpu", f"the constant {what[0]} holds {what[1]}: "
                                     "LiteRT fails every invoke of this node")

    def run() -> None:
        with np.errstate(all="ignore"):  # float x / 0: inf or NaN, as LiteRT gives
            fn(a, b, out)
    return run


for _op in BINARY:
    register_kernel(_op, "cpu", _binary_factory)
