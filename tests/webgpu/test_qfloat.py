"""qfloat.wgsl, the float32 steps of LiteRT's quantized kernels, against numpy's float32 (the cpu
kernels' arithmetic) on edge values: correctly rounded reciprocals (WGSL's ``/`` may be 2.5 ulp
off), i32 -> f32 rounded to nearest even past 2**24, C's round on halves, and a product kept
apart from the add after it (a driver contracting the two into an FMA rounds once)."""

from __future__ import annotations

import numpy as np

from tests.webgpu.test_qmath import gpu  # noqa: F401  (the fixture: WGSL expressions on the GPU)

F32 = np.float32


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, F32).view(np.int32).astype(np.int64)


def _f32(words: np.ndarray) -> np.ndarray:
    return (words & 0xFFFFFFFF).astype(np.uint32).view(F32)


def _as_f32(expr: str) -> str:
    return f"vec2<u32>(bitcast<u32>({expr}), 0u)"


def test_recip_rne_rounds_as_float32_division(gpu):  # noqa: F811
    rng = np.random.default_rng(3)
    m = np.concatenate([[0, 1, 2, 0x400000, 0x7FFFFE, 0x7FFFFF], rng.integers(0, 1 << 23, 3000)])
    e = np.concatenate([np.full(6, 127), rng.integers(64, 190, 3000)])  # 2**-63 .. 2**62
    x = ((e << 23) | m).astype(np.uint32).view(F32)
    x = np.concatenate([x, F32([1.0, 2.0, 0.5, 3.0, 1000.5, 1 / 256, 255.99998])])
    got = _f32(gpu(_as_f32("recip_rne(bitcast<f32>(a))"), _bits(x)[:, None]))
    want = F32(1) / x
    assert np.array_equal(got, want), x[got != want][:5]


def test_f32_rne_converts_as_numpy(gpu):  # noqa: F811
    rng = np.random.default_rng(4)
    v = np.concatenate([[0, 1, -1, (1 << 24) + 1, (1 << 24) + 3, -(1 << 24) - 1, (1 << 25) + 2, (1 << 25) + 6,
                         (1 << 31) - 1, -(1 << 31), (1 << 31) - 64, (1 << 31) - 65, 65535, 65536, -65536],
                        rng.integers(-(1 << 31), 1 << 31, 500)]).astype(np.int64)
    got = _f32(gpu(_as_f32("f32_rne(a)"), v[:, None]))
    assert np.array_equal(got, v.astype(F32)), v[got != v.astype(F32)][:5]


def test_round_away_rounds_halves_away_from_zero(gpu):  # noqa: F811
    x = np.concatenate([np.arange(-8, 8.5, 0.5), [0.49999997, -0.49999997, 2.5000002, 8388607.5, -8388607.5,
                                                  1e9, -1e9, 0.0]]).astype(F32)
    got = _f32(gpu(_as_f32("round_away(bitcast<f32>(a))"), _bits(x)[:, None]))
    want = (np.sign(x.astype(np.float64)) * np.floor(np.abs(x.astype(np.float64)) + 0.5)).astype(F32)
    assert np.array_equal(got, want), x[got != want]


def test_mul_rounded_then_add_rounds_twice(gpu):  # noqa: F811
    """Products whose exact value plus c lands on another float32 than the rounded product plus
    c (an FMA's single rounding would differ here); the zero word comes from the buffer."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-1000, 1000, 2000).astype(F32)
    b = rng.uniform(-1, 1, 2000).astype(F32)
    c = rng.integers(-128, 128, 2000).astype(F32)
    fused = (a.astype(np.float64) * b + c).astype(F32)
    twice = (a * b) + c
    assert (fused != twice).sum() > 10  # the data does tell the two apart
    args = np.stack([_bits(a), _bits(b), _bits(c), np.zeros(2000, np.int64)], axis=1)
    got = _f32(gpu(_as_f32("mul_rounded(bitcast<f32>(a), bitcast<f32>(b), bitcast<u32>(d)) + bitcast<f32>(c)"),
                   args))
    assert np.array_equal(got, twice)
