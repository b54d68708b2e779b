"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL, the same numbers as LiteRT's random_ops.cc.

Each node owns a Philox4x32-10 generator (TensorFlow's ``PhiloxRandom``) keyed by the options'
``seed`` and started at counter ``seed2 << 64`` (both wrapped to int32, as LiteRT keeps them),
made when the node is compiled and advanced by every invoke, as LiteRT's is from ``Prepare``.
Both seeds 0 means fresh random seeds, as in LiteRT (the outputs then differ from run to run).
Uniform floats take 23 random mantissa bits (``Uint32ToFloat``); normals use the Box-Muller
pairs of ``BoxMullerFloat``; MULTINOMIAL draws ``Uint64ToDouble`` samples against each row's
cumulative ``exp(logit - max)`` (non-finite logits add nothing) from a copy of the generator
and then skips the generator ahead by a fixed count, as LiteRT does.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph import data_layout as dl
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.detection import scalar_count
from gpulite.model.opdefs import Op

_U32 = np.uint64(0xFFFFFFFF)
_M_A, _M_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W_A, _W_B = 0x9E3779B9, 0xBB67AE85


class Philox:
    """TensorFlow's ``PhiloxRandom``: a 128-bit counter and a 64-bit key; each draw gives 4 uint32."""

    def __init__(self, seed: int, seed2: int) -> None:
        seed, seed2 = seed % (1 << 64), seed2 % (1 << 64)
        self.key = (seed & 0xFFFFFFFF, seed >> 32)
        self.counter = seed2 << 64

    def draws(self, n: int) -> np.ndarray:
        """The next ``n`` results as an (n, 4) uint64 array of uint32 values; advances by ``n``."""
        lo = self.counter & ((1 << 64) - 1)
        lows = np.uint64(lo) + np.arange(n, dtype=np.uint64)  # wraps; a wrap carries into the high half
        highs = np.uint64((self.counter >> 64) & ((1 << 64) - 1)) + (lows < np.uint64(lo)).astype(np.uint64)
        words = [lows & _U32, lows >> np.uint64(32), highs & _U32, highs >> np.uint64(32)]
        self.skip(n)
        k0, k1 = self.key
        x0, x1, x2, x3 = words
        for _ in range(10):
            p0, p1 = _M_A * x0, _M_B * x2
            x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ np.uint64(k0), p1 & _U32,
                              (p0 >> np.uint64(32)) ^ x3 ^ np.uint64(k1), p0 & _U32)
            k0, k1 = (k0 + _W_A) & 0xFFFFFFFF, (k1 + _W_B) & 0xFFFFFFFF
        return np.stack([x0, x1, x2, x3], axis=1)

    def skip(self, n: int) -> None:
        self.counter = (self.counter + n) % (1 << 128)

    def copy(self) -> Philox:
        twin = Philox(0, 0)
        twin.key, twin.counter = self.key, self.counter
        return twin


def uint32_to_float(x: np.ndarray) -> np.ndarray:
    """``Uint32ToFloat``: 1.mantissa(23 low bits) - 1, a float32 in [0, 1)."""
    bits = ((x & np.uint64(0x7FFFFF)) | np.uint64(127 << 23)).astype(np.uint32)
    return bits.view(np.float32) - np.float32(1)


def _int32(v: int) -> int:
    """``v`` wrapped to int32: LiteRT keeps the options' seeds as C ``int`` (sign-extended into Philox)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _generator(node: Node) -> Philox:
    seed, seed2 = _int32(int(node.options.seed)), _int32(int(node.options.seed2))
    if seed == 0 and seed2 == 0:
        seed, seed2 = secrets.randbits(64), secrets.randbits(64)
    return Philox(seed, seed2)


def _random(node: Node, ctx: CpuContext) -> Callable[[], None]:
    arity(node, 1)
    out = ctx.output(0)
    if ctx.in_info(0).dtype != np.int32 or out.dtype != np.float32:
        raise unsupported(node, f"expected an int32 shape and a float32 output, got {ctx.in_info(0).dtype} -> "
                          f"{out.dtype}")
    if ctx.const(0) is None:
        raise unsupported(node, "the shape is computed at run time; gpulite needs it constant (the output's shape)")
    check_out(node, out, dl.dims_shape(node, ctx.const(0)))
    rng, n, flat = _generator(node), out.size, out.reshape(-1)
    normal = node.op == Op.RANDOM_STANDARD_NORMAL

    def run() -> None:
        u = uint32_to_float(rng.draws(-(-n // 4)))
        if normal:  # BoxMullerFloat on each (even, odd) pair of a draw
            u1 = np.maximum(u[:, 0::2], np.float32(1.0e-7))
            v1 = np.float32(2.0 * math.pi) * u[:, 1::2]
            radius = np.sqrt(np.float32(-2.0) * np.log(u1))
            u = np.stack([np.sin(v1) * radius, np.cos(v1) * radius], axis=2).reshape(-1, 4)
        flat[...] = u.reshape(-1)[:n]
    return run


register_kernel(Op.RANDOM_UNIFORM, "cpu", _random)
register_kernel(Op.RANDOM_STANDARD_NORMAL, "cpu", _random)


@register_kernel(Op.MULTINOMIAL, "cpu")
def multinomial(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``num_samples`` class indices per row of float32 logits [batch, classes]."""
    arity(node, 2)
    logits, out = ctx.input(0), ctx.output(0)
    if logits.dtype != np.float32 or ctx.in_info(1).dtype != np.int32 or out.dtype not in (np.int32, np.int64):
        raise unsupported(node, f"expected float32 logits, an int32 count and an int32/int64 output, got "
                          f"{logits.dtype}, {ctx.in_info(1).dtype} -> {out.dtype}")
    if ctx.const(1) is None:
        raise unsupported(node, "num_samples is computed at run time; gpulite needs it constant (the output's shape)")
    samples = scalar_count(node, ctx.const(1), "num_samples")
    if logits.ndim != 2 or logits.shape[1] < 1:
        raise ShapeError(f"{where(node)}expected logits [batch, classes >= 1], got {list(logits.shape)}")
    check_out(node, out, (logits.shape[0], samples))
    rng, batch = _generator(node), logits.shape[0]
    per_draw = 2  # Uint64ToDouble takes two of a draw's four words

    def run() -> None:
        twin = rng.copy()
        rng.skip(batch * ((samples + 3) // 4 * 4) * 2 * 256)
        words = twin.draws(-(-batch * samples * per_draw // 4)).reshape(-1)[:batch * samples * per_draw]
        x0, x1 = words[0::2], words[1::2]
        bits = (np.uint64(1023) << np.uint64(52)) | ((x0 & np.uint64(0xFFFFF)) << np.uint64(32)) | x1
        u = (bits.view(np.float64) - 1.0).reshape(batch, samples)
        for b in range(batch):
            row = logits[b]
            finite = np.isfinite(row)
            top = float(row[finite].max()) if finite.any() else float(np.finfo(np.float32).min)
            cdf = np.cumsum(np.where(finite, np.exp(row.astype(np.float64) - top), 0.0))
            out[b] = np.searchsorted(cdf, u[b] * cdf[-1], side="right")
    return run
