"""int16 ADD, SUB, MUL and SOFTMAX of the 16x8 quantization mode (zero points 0), as LiteRT computes them.

LiteRT runs these in TFLite's builtin kernels (XNNPACK has no int16), measured against LiteRT 2.3:

- ADD (``pot_scale_int16=false``, what the converter writes, or true with a scale that is no
  power of two): the general rescale with a
  15-bit left shift (:func:`add_params`). Equal shapes run the optimized loop,
  which folds the shift into the multiply (one rounding, :func:`.quantized_binary.tflite_add_neon`'s
  form) for all but the last ``size % 16`` elements; those, and every broadcast, take the
  reference formula (:func:`.quantized_binary.tflite_add_scalar`'s, double rounding).
- SUB: the reference formula throughout.
- MUL: ``MultiplyByQuantizedMultiplier(a * b)`` by ``float(s1 * s2 / s_out)`` computed in float32.

They are computed per invoke in int64 (no table: 65536 x 65536 pairs).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import scale_zp
from gpulite.backends.cpu.kernels.quantized_binary import srdhm
from gpulite.backends.cpu.quant import multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast
from gpulite.model.opdefs import Op

_F32 = np.float32
_LEFT_SHIFT = 15
_NEON_BLOCK = 16


def add_params(s1: float, s2: float, so: float, sub: bool):
    twice_max = 2.0 * max(s1, s2)
    (m1, h1), (m2, h2) = quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max)
    mo, ho = quantize_multiplier(twice_max / ((1 << _LEFT_SHIFT) * so))
    return m1, h1, (-m2 if sub else m2), h2, mo, ho


def mul_multiplier(s1: float, s2: float, so: float) -> tuple[int, int]:
    """int16 MUL's rescale of ``a * b``: ``s1 * s2 / so`` in float32."""
    return quantize_multiplier(float(_F32(_F32(_F32(s1) * _F32(s2)) / _F32(so))))


def uses_pot_kernel(node: Node, s1: float, s2: float, so: float) -> bool:
    """Whether LiteRT runs int16 ADD/SUB with its shift-only kernel (not implemented here)."""
    return node.op != Op.MUL and getattr(node.options, "pot_scale_int16", True) and all(
        _is_pot(v) for v in (s1, s2, so))


def add_reference(a, b, params) -> np.ndarray:
    m1, h1, m2, h2, mo, ho = params
    x = multiply_by_quantized_multiplier(a << _LEFT_SHIFT, m1, h1)
    y = multiply_by_quantized_multiplier(b << _LEFT_SHIFT, m2, h2)
    return multiply_by_quantized_multiplier(x + y, mo, ho)


def add_optimized(a, b, params) -> np.ndarray:
    m1, h1, m2, h2, mo, ho = params

    def scale(v, m, h):
        n = _LEFT_SHIFT + h
        return srdhm(v << n if n >= 0 else v >> -n, m)
    return rounding_divide_by_pot(srdhm(scale(a, m1, h1) + scale(b, m2, h2), mo), -ho)


def int16_binary(node: Node, ctx) -> Callable[[], None]:
    """Factory for int16 ADD, SUB and MUL (see the module docstring)."""
    ia, ib, io = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if not (ia.dtype == ib.dtype == io.dtype == np.int16):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 inputs and output expected, got "
                                 f"{ia.dtype}, {ib.dtype} -> {io.dtype}")
    (s1, z1), (s2, z2), (so, zo) = scale_zp(node, ia), scale_zp(node, ib), scale_zp(node, io)
    if (z1, z2, zo) != (0, 0, 0):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 needs zero points 0, got {(z1, z2, zo)}")
    if uses_pot_kernel(node, s1, s2, so):
        raise UnsupportedOpError(node.op, node.index, "cpu", "int16 with pot_scale_int16=true and power-of-two "
                                 "scales (the shift-only kernel) is not implemented; the converter writes false")
    if node.activation and node.activation.clamp is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"fused {node.activation} on a quantized output")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if broadcast(a.shape, b.shape, node) != out.shape:
        raise ShapeError(f"node {node.index} ({node.op}): inputs {list(a.shape)} and {list(b.shape)} do not "
                         f"broadcast to output {list(out.shape)}")
    lo, hi = node.activation.quantized_bounds(so, 0, np.dtype(np.int16))
    if node.op == Op.MUL:
        m, h = mul_multiplier(s1, s2, so)

        def compute(x, y):
            return multiply_by_quantized_multiplier(x * y, m, h)
    else:
        params = add_params(s1, s2, so, node.op == Op.SUB)
        tail = add_tail(node, a.shape, b.shape, out.shape)

        def compute(x, y):
            r = add_reference(x, y, params).reshape(-1)
            if tail < r.size:
                r[: r.size - tail] = add_optimized(x, y, params).reshape(-1)[: r.size - tail]
            return r.reshape(out.shape)

    def run() -> None:
        x, y = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
        np.copyto(out, np.clip(compute(x, y), lo, hi), casting="unsafe")
    return run


def add_tail(node: Node, a_shape: tuple[int, ...], b_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> int:
    """How many of the last output elements take the reference formula: all but for an ADD of
    equal shapes, whose optimized loop leaves ``size % 16``."""
    size = int(np.prod(out_shape, dtype=np.int64))
    return size % _NEON_BLOCK if node.op == Op.ADD and tuple(a_shape) == tuple(b_shape) == tuple(out_shape) else size


def _is_pot(scale: float) -> bool:
    """TFLite's ``CheckedLog2`` in float32: the scale's log2 within 1e-3 of an integer. With
    ``pot_scale_int16`` set, ADD and SUB take the shift-only kernel only when all three scales
    are powers of two; otherwise the general rescale, as with the flag off."""
    f = np.float32
    lg = f(np.log(f(scale))) * (f(1.0) / f(np.log(f(2.0))))
    return bool(abs(lg - f(np.round(lg))) < f(1e-3))


def gen_lut(func: Callable[[float], float], in_min: float, in_max: float, out_min: float, out_max: float) -> np.ndarray:
    """TFLite's ``gen_lut`` for int16: 513 Q15 samples of ``func`` over [in_min, in_max] (double),
    each biased by half the rounding error of linear interpolation at its interval's midpoint."""
    steps = 512
    step = (in_max - in_min) / steps
    scale = 65536.0 / (out_max - out_min)

    def rnd(v: float) -> float:  # TfLiteRound: half away from zero
        return float(np.copysign(np.floor(abs(v) + 0.5), v))
    lut = np.empty(steps + 1, np.int64)
    for i in range(steps):
        val, mid, nxt = (func(in_min + i * step + d) for d in (0.0, step / 2, step))
        interp = rnd((nxt * scale + rnd(val * scale)) / 2)
        bias = rnd((interp - rnd(mid * scale)) / 2)
        lut[i] = min(max(rnd(val * scale) - bias, -32768), 32767)
    lut[steps] = min(max(rnd(func(in_max) * scale), -32768), 32767)
    return lut


def lut_lookup(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLite's int16 ``lut_lookup``: the 9-bit index ``256 + (x >> 7)`` and a 7-bit interpolation."""
    idx = 256 + (x >> 7)
    base = lut[idx]
    return base + (((lut[idx + 1] - base) * (x & 0x7F) + 64) >> 7)


def populate_int16(func: Callable[[np.ndarray], np.ndarray], s_in: float, zp_in: int, s_out: float,
                   zp_out: int) -> np.ndarray:
    """TFLite's ``LUTPopulate<int16_t>`` (``LUTPopulateInt16<float>``): 513 samples of the float32
    function ``func`` over the input's range, in the output's units where its range spans the
    65536 codes, each biased by half the rounding error of interpolating its interval's midpoint;
    every step in float32 as the C++ (``TfLiteRound``: ``roundf``, halves away from zero)."""
    f = np.float32
    lo, hi = -32768, 32767
    in_min, in_max = f(s_in) * f(lo - zp_in), f(s_in) * f(hi - zp_in)
    out_min, out_max = f(s_out) * f(lo - zp_out), f(s_out) * f(hi - zp_out)
    step = (in_max - in_min) / f(512)
    half = step / f(2)
    inv = f(65536) / (out_max - out_min)
    i = np.arange(512).astype(np.float32)
    at = in_min + i * step
    with np.errstate(all="ignore"):
        val, mid, nxt = func(at), func(at + half), func(in_min + (i + f(1)) * step)

        def rnd(v: np.ndarray) -> np.ndarray:
            v = np.asarray(v, np.float32)
            return np.sign(v) * np.floor(np.abs(v).astype(np.float64) + 0.5).astype(np.float32)
        sample = rnd(val * inv)
        interp = rnd((nxt * inv + sample) / f(2))
        bias = rnd((interp - rnd(mid * inv)) / f(2))
        last = rnd(func(np.array([in_max], np.float32)) * inv)
    table = np.concatenate([sample - bias, last]).astype(np.float64)
    return np.clip(np.nan_to_num(table, nan=0.0), lo, hi).astype(np.int64)


def int16_float_lut(node: Node, ctx, func: Callable[[np.ndarray], np.ndarray]) -> Callable[[], None]:
    """int16 EXP / LOG / GELU (16x8 mode) as LiteRT: :func:`populate_int16`, then ``lut_lookup``."""
    x, out = ctx.input(0), ctx.output(0)
    (si, zpi), (so, zpo) = scale_zp(node, ctx.in_info(0)), scale_zp(node, ctx.out_info(0))
    if ctx.out_info(0).dtype != np.int16 or x.shape != out.shape:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 {node.op} needs an int16 output of the input's "
                                 f"shape, got {ctx.out_info(0).dtype} {list(out.shape)}")
    lut = populate_int16(func, si, zpi, so, zpo)
    table = np.clip(lut_lookup(np.arange(-32768, 32768, dtype=np.int64), lut), -32768, 32767).astype(np.int16)

    def run() -> None:
        np.take(table, x.view(np.uint16) ^ 0x8000, out=out)  # bits ^ 0x8000: the code's rank from -32768
    return run


EXP_LUT = gen_lut(np.exp, -10.0, 0.0, -1.0, 1.0)
RECIPROCAL_LUT = gen_lut(lambda v: 1.0 / (1.0 + v), 0.0, 1.0, -1.0, 1.0)


def softmax_int16(node: Node, ctx, beta: float) -> Callable[[], None]:
    """int16 SOFTMAX (16x8 mode) as TFLite's ``SoftmaxInt16``: ``x - max`` rescaled so that
    [-65535, 0] spans [-10, 0], exp by table, the Q15 sum's reciprocal by a 1/(1+x) table after
    normalising by its leading zeros, the product shifted back to Q15 (output scale 1/32768)."""
    ii, io = ctx.in_info(0), ctx.out_info(0)
    (si, zi), (so, zo) = scale_zp(node, ii), scale_zp(node, io)
    if io.dtype != np.int16 or zi != 0 or zo != 0 or abs(so - 1.0 / 32768) > 1e-9:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 SOFTMAX needs zero points 0 and output scale "
                                 f"1/32768 (as LiteRT), got input zp {zi}, output {io.dtype} scale {so} zp {zo}")
    mult, shift = quantize_multiplier(si * float(_F32(beta)) / (10.0 / 65535.0))
    x, out = ctx.input(0), ctx.output(0)

    def run() -> None:
        v = x.astype(np.int64)
        diff = multiply_by_quantized_multiplier(v - v.max(axis=-1, keepdims=True), mult, shift) + 32767
        e = lut_lookup(np.clip(diff, -32768, 32767), EXP_LUT)
        total = e.sum(axis=-1, keepdims=True)
        headroom = 64 - np.frexp(total.astype(np.float64))[1] - 32  # count of leading zeros in 32 bits
        shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
        recip = lut_lookup(np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767), RECIPROCAL_LUT)
        right = 31 - headroom
        res = (e * recip + (np.int64(1) << (right - 1))) >> right
        np.copyto(out, np.clip(res, 0, 32767), casting="unsafe")
    return run
