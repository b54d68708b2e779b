"""qmath.wgsl's integer arithmetic against backends/cpu/quant.py, the CPU kernels' definition.

Each case runs one WGSL expression of the library per thread on rows of four int32 arguments
and compares the 64-bit result words with the numpy function on edge values: INT32_MIN/MAX,
zero, the multipliers' extremes, every shift the rescales take, and ties (remainders of
exactly one half), plus random values.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from gpulite.backends.cpu import quant
from gpulite.backends.cpu.kernels.quantized_binary import srdhm
from gpulite.backends.webgpu import program
from gpulite.backends.webgpu.kernels.qmath import codes_per_word, load_fn, multiplier, multiplier_params
from tests.webgpu.support import require_adapter

require_adapter()

MIN, MAX = quant.INT32_MIN, quant.INT32_MAX
_DRIVER = """//#include "qmath.wgsl"
//#include "qfloat.wgsl"
//#include "qlog.wgsl"
fn arg(i: u32, k: u32) -> i32 { return bitcast<i32>(buf[P.in_off + 4u * i + k]); }
fn run(i: u32) {
    let a = arg(i, 0u);
    let b = arg(i, 1u);
    let c = arg(i, 2u);
    let d = arg(i, 3u);
    let r: vec2<u32> = $EXPR;
    buf[P.out_off + 2u * i] = r.x;
    buf[P.out_off + 2u * i + 1u] = r.y;
}
"""


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    """``run(expr, args) -> int64 results``: ``expr`` (WGSL over a, b, c, d: i32, giving
    vec2<u32>; qmath.wgsl's, qfloat.wgsl's and qlog.wgsl's functions) evaluated on each row of ``args`` on
    the GPU (tests/webgpu/test_qfloat.py uses it too)."""
    import wgpu

    from gpulite.backends.webgpu.device import get_device
    from gpulite.backends.webgpu.program import get_pipeline, make_program

    folder = tmp_path_factory.mktemp("wgsl")
    for f in ("common.wgsl", "qmath.wgsl", "qfloat.wgsl", "qlog.wgsl"):
        shutil.copy(program.WGSL_DIR / f, folder)
    (folder / "qmath_probe.wgsl").write_text(_DRIVER)
    gdev = get_device()

    def run(expr: str, args: np.ndarray) -> np.ndarray:
        args = np.asarray(args, np.int64)
        rows = np.zeros((len(args), 4), np.int64)
        rows[:, :args.shape[1]] = args
        words = np.concatenate([rows.astype(np.int32).view(np.uint32).reshape(-1), np.zeros(2 * len(args), np.uint32)])
        saved, program.WGSL_DIR = program.WGSL_DIR, folder
        program._sources.cache_clear()
        try:
            prog = make_program(f"qmath {expr}", "qmath_probe", [("in_off", "u32", 0), ("out_off", "u32", rows.size)],
                                len(args), word="u32", EXPR=expr)
        finally:
            program.WGSL_DIR = saved
            program._sources.cache_clear()
        dev = gdev.device
        arena = dev.create_buffer_with_data(data=words.tobytes(), usage=wgpu.BufferUsage.STORAGE
                                            | wgpu.BufferUsage.COPY_SRC)
        ubuf = dev.create_buffer_with_data(data=prog.params, usage=wgpu.BufferUsage.UNIFORM)
        bg = dev.create_bind_group(layout=gdev.bind_group_layout, entries=[
            {"binding": 0, "resource": {"buffer": arena, "offset": 0, "size": arena.size}},
            {"binding": 1, "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size}},
            {"binding": 2, "resource": {"buffer": arena, "offset": 0, "size": arena.size}}])
        enc = dev.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(get_pipeline(gdev, prog))
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(*prog.dispatch)
        cp.end()
        dev.queue.submit([enc.finish()])
        out = np.frombuffer(dev.queue.read_buffer(arena), np.uint32)[rows.size:]
        arena.destroy()
        ubuf.destroy()
        return out.view(np.int64)
    return run


def _edges() -> np.ndarray:
    rng = np.random.default_rng(0)
    fixed = [MIN, MIN + 1, -(1 << 30), -65536, -32769, -257, -2, -1, 0, 1, 2, 255, 32767, 1 << 30, MAX - 1, MAX]
    return np.concatenate([fixed, rng.integers(MIN, MAX, 24, endpoint=True)]).astype(np.int64)


def _multipliers() -> np.ndarray:
    rng = np.random.default_rng(1)
    fixed = [0, 1, 1 << 30, (1 << 30) + 1, 0x7FFEFFFF, 0x7FFF0000, 0x7FFF8000, MAX - 1, MAX]
    return np.concatenate([fixed, rng.integers(1 << 30, MAX, 8)]).astype(np.int64)


def _grid(*axes: np.ndarray) -> np.ndarray:
    return np.stack([g.reshape(-1) for g in np.meshgrid(*axes, indexing="ij")], axis=1).astype(np.int64)


def _i64(lo_hi: np.ndarray) -> np.ndarray:
    """int64 values of the (low, high) argument pairs."""
    return (lo_hi[:, 1] << 32) | (lo_hi[:, 0] & 0xFFFFFFFF)


def test_wide_products(gpu):
    e = _edges()
    ab = _grid(e, e)
    np.testing.assert_array_equal(gpu("q_mul_wide(a, b)", ab), ab[:, 0] * ab[:, 1])
    u = ab & 0xFFFFFFFF
    want = (u[:, 0].astype(object) * u[:, 1].astype(object)).astype(np.uint64).view(np.int64)
    np.testing.assert_array_equal(gpu("q_mulu_wide(bitcast<u32>(a), bitcast<u32>(b))", ab), want)


def test_int64_multiply_add_shift(gpu):
    rng = np.random.default_rng(2)
    x = np.concatenate([[MIN, -1, 0, 1, MAX, -(1 << 47), (1 << 47) - 1], rng.integers(-(1 << 62), 1 << 62, 10)])
    m = np.array([MIN, -3, -1, 0, 1, 0x7FFF, MAX], np.int64)
    xm = _grid(x, m)
    args = np.stack([xm[:, 0] & 0xFFFFFFFF, xm[:, 0] >> 32, xm[:, 1]], axis=1)
    with np.errstate(over="ignore"):
        want = xm[:, 0] * xm[:, 1]  # wraps modulo 2^64, as C
    np.testing.assert_array_equal(gpu("q_mul64(vec2<u32>(bitcast<u32>(a), bitcast<u32>(b)), c)", args), want)
    shifts = np.arange(64)
    xs = _grid(x, shifts)
    args = np.stack([xs[:, 0] & 0xFFFFFFFF, xs[:, 0] >> 32, xs[:, 1]], axis=1)
    np.testing.assert_array_equal(gpu("q_shr64(vec2<u32>(bitcast<u32>(a), bitcast<u32>(b)), u32(c))", args),
                                  xs[:, 0] >> xs[:, 1])
    sat = np.clip(xs[:, 0] >> xs[:, 1], MIN, MAX)
    np.testing.assert_array_equal(gpu("q_i64(q_sat32(q_shr64(vec2<u32>(bitcast<u32>(a), bitcast<u32>(b)), u32(c))))",
                                      args), sat)


def test_saturating_rounding_doubling_high_mul(gpu):
    e = _edges()
    ab = _grid(e, np.concatenate([e, _multipliers()]))
    want = srdhm(ab[:, 0], ab[:, 1])
    want[(ab[:, 0] == MIN) & (ab[:, 1] == MIN)] = MAX  # srdhm leaves this case to its callers
    np.testing.assert_array_equal(gpu("q_i64(q_srdhm(a, b))", ab), want)


def test_rounding_divide_by_pot_ties(gpu):
    exps = np.arange(32)
    ties = [(2 * k + 1) << (x - 1) for x in range(1, 31) for k in (0, 1, 5)]  # remainder exactly half
    x = np.unique(np.concatenate([_edges(), ties, [-t for t in ties]]))
    xe = _grid(x, exps)
    xe = xe[(xe[:, 0] >= MIN) & (xe[:, 0] <= MAX)]
    np.testing.assert_array_equal(gpu("q_i64(q_rdbpot(a, b))", xe), quant.rounding_divide_by_pot(xe[:, 0], xe[:, 1]))


def test_multiply_by_quantized_multiplier_double(gpu):
    args = _grid(_edges(), _multipliers(), np.arange(-31, 8))
    want = quant.multiply_by_quantized_multiplier(args[:, 0], args[:, 1], args[:, 2])
    want[(args[:, 1] == MIN)] = 0  # not a multiplier QuantizeMultiplier makes; keeps the grid simple
    got = gpu("q_i64(q_mbqm(a, b, c))", args)
    got[(args[:, 1] == MIN)] = 0
    np.testing.assert_array_equal(got, want)


def test_multiply_by_quantized_multiplier_neon(gpu):
    """q_mbqm_neon: the NEON loop of TFLite's optimized per-channel Quantize (quant.NeonRequantizer),
    ties of its final shift included (x = 2 * odd * 2**(e - 1) with multiplier 2**30)."""
    ties = [2 * (2 * k + 1) << (e - 1) for e in range(1, 30) for k in (0, 1, 5)]
    x = np.unique(np.concatenate([_edges(), ties, [-t for t in ties]]))
    x = x[(x >= MIN) & (x <= MAX)]
    args = _grid(x, _multipliers()[1:], np.arange(-31, 8))
    got = gpu("q_i64(q_mbqm_neon(a, b, c))", args)
    for m, sh in {(int(m), int(s)) for m, s in args[:, 1:]}:
        sel = (args[:, 1] == m) & (args[:, 2] == sh)
        acc = np.repeat(args[sel, :1], 8, axis=1)  # eight channels: all in the NEON loop
        rq = quant.NeonRequantizer(acc.shape, np.array([m]), np.array([sh]), 0, MIN, MAX)
        want = np.empty(acc.shape, np.int64)
        rq(acc, want)
        np.testing.assert_array_equal(got[sel], want[:, 0])


def test_multiply_by_quantized_multiplier_single(gpu):
    args = _grid(_edges(), _multipliers(), np.arange(-31, 31))
    want = quant.multiply_by_quantized_multiplier_single(args[:, 0], args[:, 1], args[:, 2])
    np.testing.assert_array_equal(gpu("q_mbqm_single64(q_i64(a), b, c)", args), want)
    # int64 accumulators (the 16x8 FULLY_CONNECTED): products wrap modulo 2^64 as numpy's
    rng = np.random.default_rng(3)
    x = np.concatenate([[-(1 << 40), (1 << 40) - 1], rng.integers(-(1 << 40), 1 << 40, 6)])
    xm = _grid(x, _multipliers(), np.arange(-31, 31, 3))
    args = np.stack([xm[:, 0] & 0xFFFFFFFF, xm[:, 0] >> 32, xm[:, 1], xm[:, 2]], axis=1)
    with np.errstate(over="ignore"):
        want = quant.multiply_by_quantized_multiplier_single(xm[:, 0], xm[:, 1], xm[:, 2])
    np.testing.assert_array_equal(gpu("q_mbqm_single64(vec2<u32>(bitcast<u32>(a), bitcast<u32>(b)), c, d)", args),
                                  want)


def test_multiply_by_quantized_multiplier_int64(gpu):
    rng = np.random.default_rng(4)
    x = np.concatenate([_edges(), [-(1 << 47), (1 << 47) - 1, 3 << 40], rng.integers(-(1 << 47), 1 << 47, 8)])
    xm = _grid(x, _multipliers(), np.arange(-31, 15))
    args = np.stack([xm[:, 0] & 0xFFFFFFFF, xm[:, 0] >> 32, xm[:, 1], xm[:, 2]], axis=1)
    got = gpu("q_mbqm_i64(vec2<u32>(bitcast<u32>(a), bitcast<u32>(b)), c, d)", args)
    # C's cast to int32 wraps (quant.multiply_by_quantized_multiplier_int64) ...
    np.testing.assert_array_equal(got.astype(np.int32), quant.multiply_by_quantized_multiplier_int64(*xm.T))
    # ... the 16x8 kernels' Requantizer clamps the 64-bit value
    for m, s in {(int(m), int(s)) for m, s in xm[:, 1:]}:
        sel = (xm[:, 1] == m) & (xm[:, 2] == s)
        rq = quant.Requantizer((int(sel.sum()),), np.array([m]), np.array([s]), 0, MIN, MAX, int64=True)
        want = np.empty(int(sel.sum()), np.int64)
        rq(xm[sel, 0].copy(), want)
        np.testing.assert_array_equal(np.clip(got[sel], MIN, MAX), want)


def test_output_zero_point_and_clamp(gpu):
    r = _edges()
    args = _grid(r, np.array([-128, 0, 5, 127, 255, 32767]))
    lo, hi = -128, 127
    want = np.clip(args[:, 0] + args[:, 1], lo, hi)
    np.testing.assert_array_equal(gpu(f"q_i64(q_out(a, b, {lo}, {hi}))", args), want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
def test_packed_codes(gpu, dtype):
    """q_load_* (and q_unpack_*x4) read each element of packed words; q_byte / q_half rebuild the words."""
    info = np.iinfo(dtype)
    codes = np.random.default_rng(5).integers(info.min, info.max, 48, endpoint=True).astype(dtype)
    codes[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    words = codes.view(np.uint32)
    n = codes.size
    # the packed words from buf[P.in_off] on (over the argument rows); thread i reads element i
    per = codes_per_word(dtype)
    flat = np.zeros((n, 4), np.int64)
    flat.reshape(-1)[:words.size] = words.view(np.int32)
    expr = f"q_i64({load_fn(dtype)}(P.in_off, i))"
    np.testing.assert_array_equal(gpu(expr, flat), codes.astype(np.int64))
    if per == 4:  # a word's four codes at once
        unpack = "q_unpack_i8x4" if info.min < 0 else "q_unpack_u8x4"
        got = gpu(f"q_i64({unpack}(buf[P.in_off + i / 4u])[i % 4u])", flat)
        np.testing.assert_array_equal(got, codes.astype(np.int64))
    pack = "q_byte" if per == 4 else "q_half"
    rebuilt = " | ".join(f"{pack}({load_fn(dtype)}(P.in_off, {per}u * i + {k}u), {k}u)"
                         for k in range(per))
    got = gpu(f"vec2<u32>({rebuilt}, 0u)", flat)[:words.size]
    np.testing.assert_array_equal(got.astype(np.uint32), words)


def test_multiplier_params():
    m, s = multiplier(0.3)
    assert (m, s) == quant.quantize_multiplier(0.3) and 1 << 30 <= m <= MAX
    assert multiplier_params("out", 0.3) == [("out_m", "i32", m), ("out_shift", "i32", s)]
    assert multiplier(0.0) == (0, 0)
    with pytest.raises(ValueError, match=r"shift 17, outside -47\.\.14"):
        multiplier(70000.0, "int64")
    with pytest.raises(ValueError, match="not a non-negative number"):
        multiplier(float("nan"))
