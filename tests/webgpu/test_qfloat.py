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


def test_ln_f32_rounds_as_float64_log(gpu):  # noqa: F811
    """qlog.wgsl's logarithm (LOG_SOFTMAX's log of the row's sum, s in [1, 1024]) against the
    cpu's float32(log(float64(s))): float32s just above 1 (tiny logarithms), at the table's
    interval edges, powers of two, and random ones. The op suite's LOG_SOFTMAX cases cannot
    tell a few-ulp logarithm from this one (a rounding rarely flips), so this test does."""
    from gpulite.backends.webgpu.kernels.qsoftmax import LOG_TABLES

    rng = np.random.default_rng(6)
    near_one = (np.arange(1, 200) + 0x3F800000).astype(np.uint32).view(F32)
    edges = np.array([1 + k / 128 for k in range(128)] + [2.0 ** e for e in range(11)], F32)
    edges = np.concatenate([edges, np.nextafter(edges, F32(2000)), np.nextafter(edges[1:], F32(0))])
    s = np.concatenate([near_one, edges, rng.uniform(1, 1024, 3000).astype(F32), F32([1.0, 1024.0])])
    s = s[s >= 1]  # a row's sum holds its max's exp(0) = 1
    table = np.concatenate([LOG_TABLES, np.zeros(-len(LOG_TABLES) % 4, np.uint32)]).view(np.int32).reshape(-1, 4)
    args = np.zeros((len(s) + len(table), 4), np.int64)
    args[:len(s), 0] = _bits(s)
    args[:len(s), 1] = 4 * len(s)  # the table's word offset: it follows the arguments
    args[len(s):] = table
    got = _f32(gpu(_as_f32("ln_f32(bitcast<f32>(a), u32(b))"), args)[:len(s)])
    want = np.log(s.astype(np.float64)).astype(F32)
    assert np.array_equal(got, want), (s[got != want][:5], got[got != want][:5], want[got != want][:5])
