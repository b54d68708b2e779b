"""gpulite.backends.cpu.quant against a line-by-line Python transcription of TFLite's C++."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.backends.cpu.quant import (
    Requantizer,
    hybrid_matmul,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_single,
    quantize_multiplier,
    quantize_rows,
)


def _c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_mbqm(x: int, m: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier(int32 x, int32 m, int shift), double rounding."""
    left, right = max(shift, 0), max(-shift, 0)
    a = ((x * (1 << left) + 2**31) % 2**32) - 2**31  # int32 multiply wraps
    if a == m == -(2**31):
        high = 2**31 - 1
    else:
        ab = a * m
        high = _c_div(ab + ((1 << 30) if ab >= 0 else (1 - (1 << 30))), 1 << 31)
    mask = (1 << right) - 1
    return (high >> right) + (1 if (high & mask) > (mask >> 1) + (1 if high < 0 else 0) else 0)


def test_quantize_multiplier_known_values() -> None:
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    assert quantize_multiplier(0.25) == (1 << 30, -1)
    # Rounds up to 2**31 and renormalises: q_fixed /= 2, ++shift.
    assert quantize_multiplier(1 - 2.0**-40) == (1 << 30, 1)
    assert quantize_multiplier(2.0**-40) == (0, 0)  # shift < -31 flushes to zero


@pytest.mark.parametrize("seed", range(5))
def test_multiply_by_quantized_multiplier_matches_c(seed: int) -> None:
    rng = np.random.default_rng(seed)
    real = float(10 ** rng.uniform(-6, 1.5))
    m, s = quantize_multiplier(real)
    x = rng.integers(-(2**24), 2**24, 2000)
    # Exact halves after the high multiply are where the two roundings matter.
    x[:6] = [0, 1, -1, 2**31 - 1, -(2**31), 3 << 20]
    want = np.array([_c_mbqm(int(v), m, s) for v in x])
    np.testing.assert_array_equal(multiply_by_quantized_multiplier(x, m, s), want)
    for single in (False, True):
        rq = Requantizer(x.shape, np.array([m]), np.array([s]), 3, -128, 127, single_rounding=single)
        out = np.empty(x.shape, np.int8)
        rq(x.copy(), out)
        ref = multiply_by_quantized_multiplier_single(x, m, s) if single else want
        np.testing.assert_array_equal(out, np.clip(ref + 3, -128, 127))


def test_single_and_double_rounding_differ_on_a_half() -> None:
    # 12547 * 0.0038653...: the high multiply gives 12416 = 48.5 * 256, then rounds again to 49;
    # one rounding of the exact product (48.4986) gives 48.
    m, s = 2124999669, -8
    assert int(multiply_by_quantized_multiplier(12547, m, s)) == 49
    assert int(multiply_by_quantized_multiplier_single(12547, m, s)) == 48


def test_per_channel_requantizer_broadcasts_along_last_axis() -> None:
    reals = [0.001, 0.37, 1.7]
    ms, ss = zip(*(quantize_multiplier(r) for r in reals), strict=True)
    acc = np.random.default_rng(9).integers(-50000, 50000, (4, 5, 3))
    out = np.empty(acc.shape, np.uint8)
    Requantizer(acc.shape, np.array(ms), np.array(ss), 128, 0, 255)(acc.copy(), out)
    for c in range(3):
        want = np.clip(multiply_by_quantized_multiplier(acc[..., c], ms[c], ss[c]) + 128, 0, 255)
        np.testing.assert_array_equal(out[..., c], want)


# --- hybrid kernels' per-row input quantization (tensor_utils' Portable*QuantizeFloats) ---------

def _c_round(v: float) -> int:
    """C's round / roundf: halves away from zero."""
    return int(np.copysign(np.floor(abs(v) + 0.5), v))


def _c_symmetric(row: np.ndarray) -> tuple[list[int], float]:
    rng = max(abs(float(row.min())), abs(float(row.max())))  # float32 values: exact in double
    if rng == 0:
        return [0] * row.size, 1.0
    f32 = np.float32
    inv = f32(127) / f32(rng)
    return [max(-127, min(127, _c_round(float(f32(v) * inv)))) for v in row], float(f32(rng) / f32(127))


def _c_asymmetric(row: np.ndarray) -> tuple[list[int], float, int]:
    rmin, rmax = min(0.0, float(row.min())), max(0.0, float(row.max()))  # double, as the C++
    if rmin == rmax:
        return [0] * row.size, 1.0, 0
    scale = (rmax - rmin) / 255.0
    from_min, from_max = -128.0 - rmin / scale, 127.0 - rmax / scale
    zp_real = from_min if abs(-128.0) + abs(rmin / scale) < abs(127.0) + abs(rmax / scale) else from_max
    zp = -128 if zp_real <= -128 else 127 if zp_real >= 127 else _c_round(zp_real)
    f32 = np.float32
    inv = f32(1) / f32(scale)
    q = [max(-128, min(127, _c_round(float(f32(zp) + f32(v) * inv)))) for v in row]
    return q, float(f32(scale)), zp


def _rows() -> np.ndarray:
    rng = np.random.default_rng(11)
    rows = [rng.uniform(-3, 3, 17), rng.uniform(0.5, 2, 17), -rng.uniform(0.5, 2, 17), np.zeros(17),
            rng.normal(0, 1e-3, 17), np.linspace(-1, 1, 17)]
    halves = np.full(17, 0.5)
    halves[0] = 127.0  # scale 1: values landing exactly on .5 steps
    rows.append(halves)
    return np.array(rows, np.float32)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_quantize_rows_matches_the_c_transcription(asymmetric):
    x = _rows()
    q, scale, zp = quantize_rows(x, asymmetric)
    for r, row in enumerate(x):
        if asymmetric:
            want_q, want_scale, want_zp = _c_asymmetric(row)
        else:
            (want_q, want_scale), want_zp = _c_symmetric(row), 0
        assert q[r].tolist() == want_q, f"row {r}"
        assert float(scale[r]) == want_scale and int(zp[r]) == want_zp, f"row {r}"


def test_hybrid_matmul_is_the_integer_product_rescaled():
    rng = np.random.default_rng(12)
    x = rng.uniform(-2, 2, (3, 40)).astype(np.float32)
    w = rng.integers(-127, 128, (5, 40)).astype(np.int8)
    w_scale = np.float32(0.02)
    for asymmetric in (False, True):
        q, sf, zp = quantize_rows(x, asymmetric)
        acc = q.astype(np.int64) @ w.T.astype(np.int64) - zp[:, None] * w.astype(np.int64).sum(axis=1)[None, :]
        want = acc.astype(np.float32) * (sf[:, None] * w_scale)
        sums = w.astype(np.float32).sum(axis=1) if asymmetric else None
        got = hybrid_matmul(q, sf, zp, np.ascontiguousarray(w.T, np.float32), w_scale, sums)
        np.testing.assert_array_equal(got, want)
