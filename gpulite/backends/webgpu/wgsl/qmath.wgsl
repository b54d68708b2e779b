// LiteRT's integer arithmetic in WGSL, and packed narrow codes: `//#include "qmath.wgsl"` in a
// program made with word="u32" (buf is array<u32>; the q_load_* read any word type, so an
// i32 reduction tree may include it too). Bit for bit the functions of
// backends/cpu/quant.py (tests/webgpu/test_qmath.py checks them on edge values); the Python
// side (multipliers as uniforms or tables) is kernels/qmath.py.
//
// Packed codes: an int8/uint8 tensor holds 4 codes a u32 word, an int16 one 2, element e in
// word e / 4 (e / 2) at byte (half) e % 4 (e % 2), little-endian. q_load_* read element e of
// the tensor whose first word is `off`. Nothing may write part of a word (two threads'
// stores would race): a thread builds whole words from q_byte / q_half and stores them.
//
// 64-bit integers (WGSL has none) are vec2<u32>(low, high), two's complement; q_mul64, q_add64
// wrap modulo 2^64 as C's int64 arithmetic would (and numpy's int64, the CPU kernels').

fn q_load_i8(off: u32, e: u32) -> i32 {
    return bitcast<i32>(bitcast<u32>(buf[off + (e >> 2u)]) << (24u - ((e & 3u) << 3u))) >> 24u;
}

fn q_load_u8(off: u32, e: u32) -> i32 {
    return i32((bitcast<u32>(buf[off + (e >> 2u)]) >> ((e & 3u) << 3u)) & 0xffu);
}

fn q_load_i16(off: u32, e: u32) -> i32 {
    return bitcast<i32>(bitcast<u32>(buf[off + (e >> 1u)]) << (16u - ((e & 1u) << 4u))) >> 16u;
}

fn q_load_i32(off: u32, e: u32) -> i32 {
    return bitcast<i32>(buf[off + e]);
}

// Code c (already in its dtype's range) placed as byte / half k of a word: OR k = 0..3 (0..1).
fn q_byte(c: i32, k: u32) -> u32 {
    return (bitcast<u32>(c) & 0xffu) << (k << 3u);
}

fn q_half(c: i32, k: u32) -> u32 {
    return (bitcast<u32>(c) & 0xffffu) << (k << 4u);
}

// The 4 codes of a word as vec4<i32> (element 4j + c in component c).
fn q_unpack_i8x4(w: u32) -> vec4<i32> {
    return bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u);
}

fn q_unpack_u8x4(w: u32) -> vec4<i32> {
    return bitcast<vec4<i32>>((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu));
}

const Q_INT32_MIN = -2147483647i - 1i;
const Q_INT32_MAX = 2147483647i;

// -- 64-bit integers ------------------------------------------------------------------------

fn q_i64(x: i32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0));
}

// 2^n, n in 0..62.
fn q_pow2_64(n: u32) -> vec2<u32> {
    return select(vec2<u32>(0u, 1u << (n - 32u)), vec2<u32>(1u << n, 0u), n < 32u);
}

fn q_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// The full product of two u32 (16-bit halves: WGSL multiplies keep the low 32 bits only).
fn q_mulu_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// The full product of two i32 (never overflows 64 bits).
fn q_mul_wide(a: i32, b: i32) -> vec2<u32> {
    let p = q_mulu_wide(bitcast<u32>(a), bitcast<u32>(b));
    var hi = p.y;
    if (a < 0) {
        hi -= bitcast<u32>(b);
    }
    if (b < 0) {
        hi -= bitcast<u32>(a);
    }
    return vec2<u32>(p.x, hi);
}

// a * m modulo 2^64 (int64 times int32, wrapping).
fn q_mul64(a: vec2<u32>, m: i32) -> vec2<u32> {
    let p = q_mulu_wide(a.x, bitcast<u32>(m));
    var hi = p.y + a.y * bitcast<u32>(m);
    if (m < 0) {
        hi -= a.x;
    }
    return vec2<u32>(p.x, hi);
}

// a >> s, arithmetic (rounds toward -infinity), s in 0..63.
fn q_shr64(a: vec2<u32>, s: u32) -> vec2<u32> {
    let hi = bitcast<i32>(a.y);
    if (s == 0u) {
        return a;
    }
    if (s < 32u) {
        return vec2<u32>((a.x >> s) | (a.y << (32u - s)), bitcast<u32>(hi >> s));
    }
    return vec2<u32>(bitcast<u32>(hi >> (s - 32u)), bitcast<u32>(hi >> 31u));
}

// a as i32, saturated to [INT32_MIN, INT32_MAX] (the C cast would wrap: bitcast<i32>(a.x)).
fn q_sat32(a: vec2<u32>) -> i32 {
    let lo = bitcast<i32>(a.x);
    if (bitcast<i32>(a.y) == (lo >> 31u)) {
        return lo;
    }
    return select(Q_INT32_MAX, Q_INT32_MIN, bitcast<i32>(a.y) < 0);
}

// -- gemmlowp / TFLite fixed point ----------------------------------------------------------

// gemmlowp's SaturatingRoundingDoublingHighMul: (a * b + nudge) / 2^31 truncated toward zero,
// nudge 2^30 (or 1 - 2^30 for a negative product); INT32_MIN * INT32_MIN saturates.
fn q_srdhm(a: i32, b: i32) -> i32 {
    if (a == Q_INT32_MIN && b == Q_INT32_MIN) {
        return Q_INT32_MAX;
    }
    let ab = q_mul_wide(a, b);
    let neg = bitcast<i32>(ab.y) < 0;
    let s = q_add64(ab, q_i64(select(1i << 30u, 1i - (1i << 30u), neg)));
    var r = bitcast<i32>((s.x >> 31u) | (s.y << 1u));  // floor(s / 2^31)
    if (neg && (s.x & 0x7fffffffu) != 0u) {
        r += 1;  // toward zero
    }
    return r;
}

// gemmlowp's RoundingDivideByPOT: x / 2^e rounded half away from zero, e in 0..31.
fn q_rdbpot(x: i32, e: i32) -> i32 {
    let mask = bitcast<i32>((1u << u32(e)) - 1u);
    let threshold = (mask >> 1u) + select(0, 1, x < 0);
    return (x >> u32(e)) + select(0, 1, (x & mask) > threshold);
}

// TFLite's MultiplyByQuantizedMultiplier(int32 x, multiplier, shift), double rounding (the
// default build): q_rdbpot(q_srdhm(x << max(shift, 0), m), max(-shift, 0)); the left shift
// wraps in int32 as the C does. shift in -31..31.
fn q_mbqm(x: i32, m: i32, shift: i32) -> i32 {
    return q_rdbpot(q_srdhm(x << u32(max(shift, 0)), m), max(-shift, 0));
}

// TFLite's optimized per-channel Quantize, its NEON loop (LiteRT's builtin int8 TRANSPOSE_CONV
// and DEPTHWISE_CONV_2D; ruy's rounding, its builtin 8-bit CONV_2D and FULLY_CONNECTED;
// cpu quant.NeonRequantizer): x << max(shift, 0) (wrapping), vqrdmulh by m ((x * m + 2^30) >> 31)
// and vrshl right by max(-shift, 0), both rounding halves up where q_mbqm rounds them away from zero.
fn q_mbqm_neon(x: i32, m: i32, shift: i32) -> i32 {
    let s = q_add64(q_mul_wide(x << u32(max(shift, 0)), m), q_i64(1i << 30u));
    let h = bitcast<i32>((s.x >> 31u) | (s.y << 1u));  // floor(s / 2^31)
    let e = max(-shift, 0);
    if (e == 0) {
        return h;
    }
    return (h >> u32(e)) + ((h >> u32(e - 1)) & 1);  // (h + 2^(e-1)) >> e without overflow
}

// The single-rounding form (TFLITE_SINGLE_ROUNDING's; LiteRT's reference FULLY_CONNECTED):
// (x * m + 2^(30 - shift)) >> (31 - shift) in 64 bits, shift in -31..30. The 64-bit result
// (the 16x8 FULLY_CONNECTED saturates it with q_sat32).
fn q_mbqm_single64(x: vec2<u32>, m: i32, shift: i32) -> vec2<u32> {
    let total = u32(31 - shift);
    return q_shr64(q_add64(q_mul64(x, m), q_pow2_64(total - 1u)), total);
}

// TFLite's MultiplyByQuantizedMultiplier(int64 x, int32 multiplier, shift) (the 16x8 ops):
// the multiplier rounded to Q15, then (x * reduced + 2^(14 - shift)) >> (15 - shift), shift in
// -47..14. The 64-bit result: C casts it to int32 (wrapping: bitcast<i32>(r.x)), the CPU
// kernels' Requantizer clamps it (q_sat32).
fn q_mbqm_i64(x: vec2<u32>, m: i32, shift: i32) -> vec2<u32> {
    let reduced = select(0x7fff, (m + (1 << 15u)) >> 16u, m < 0x7fff0000);
    let total = u32(15 - shift);
    return q_shr64(q_add64(q_mul64(x, reduced), q_pow2_64(total - 1u)), total);
}

// The rescaled value r plus the output zero point, clamped to [lo, hi] (the dtype's range,
// narrowed by a fused activation), as the CPU kernels do in int64: r is first brought into
// +-2^30, which changes no result for a zero point within +-2^16 and keeps the add in int32.
fn q_out(r: i32, zp: i32, lo: i32, hi: i32) -> i32 {
    return clamp(clamp(r, -(1i << 30u), 1i << 30u) + zp, lo, hi);
}

// SaturatingRoundingMultiplyByPOT<e> for e > 0.
fn q_shl_sat(x: i32, e: u32) -> i32 {
    let threshold = (1 << (31u - e)) - 1;
    if (x > threshold) {
        return Q_INT32_MAX;
    }
    if (x < -threshold) {
        return Q_INT32_MIN;
    }
    return x << e;
}

// (multiplier, shift for q_mbqm) of 1 / sqrt(acc): TFLite's GetInvSqrtQuantizedMultiplierExp
// (reverse shift -1), five Newton-Raphson steps in gemmlowp's Q3 fixed point, as the cpu's
// quantized_l2norm.inv_sqrt_multiplier (L2_NORMALIZATION, the int8 LSTM's layer norm).
fn q_inv_sqrt(acc: i32) -> vec2<i32> {
    if (acc <= 1) {
        return vec2<i32>(Q_INT32_MAX, 0);
    }
    var x = acc;
    var shift = 11;
    while (x >= (1 << 29u)) {
        x = x >> 2u;
        shift += 1;
    }
    let pairs = (i32(countLeadingZeros(u32(x))) - 1) / 2 - 1;
    shift -= pairs;
    x = x << u32(2 * pairs);
    let half_input = q_rdbpot(x >> 1u, 1);
    let half_three = (1 << 28u) + (1 << 27u);
    var y = 1 << 28u;
    for (var k = 0; k < 5; k++) {
        let y3 = q_shl_sat(q_srdhm(q_srdhm(y, y), y), 6u);
        y = q_shl_sat(q_srdhm(half_three, y) - q_srdhm(half_input, y3), 3u);
    }
    y = q_srdhm(y, 1518500250);
    if (shift < 0) {
        y = y << u32(-shift);
        shift = 0;
    }
    return vec2<i32>(y, -shift);
}
