// The float32 steps of LiteRT's quantized kernels (the cpu kernels' numpy float32), rounded as
// they round: `//#include "qfloat.wgsl"` beside qmath.wgsl (its integer arithmetic); the float32
// RESIZE_BILINEAR uses mul_rounded for XNNPACK's float32 blend too. WGSL lets a
// driver contract a * b + c into an FMA and leaves division and inexact i32 -> f32 conversions
// a little loose; these do not.

// x * y rounded to f32, kept from being fused with a following add: a driver may contract
// x * y + c into an FMA, which rounds once where the kernel rounds twice. `zero` is a uniform
// 0 the compiler cannot see through.
fn mul_rounded(x: f32, y: f32, zero: u32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x * y) ^ zero);
}

// x as f32 rounded to nearest even (WGSL leaves inexact i32 -> f32 conversions' rounding to
// the implementation; both halves convert exactly and one add rounds).
fn f32_rne(x: i32) -> f32 {
    return f32(x >> 16u) * 65536.0 + f32(x & 0xffff);
}

// C's round (TfLiteRound): halves away from zero.
fn round_away(x: f32) -> f32 {
    let a = abs(x);
    var r = floor(a);
    if (a - r >= 0.5) {
        r += 1.0;
    }
    return select(r, -r, x < 0.0);
}

// 1 / x rounded to nearest (as the CPU's float32 division; WGSL's division may be 2.5 ulp off),
// for a positive normal x with a normal reciprocal: x = m * 2^(e - 150) with the 24-bit
// mantissa m, so 1 / x = (2^47 / m) * 2^(103 - e); 2^47 / m by long division, 8 bits a step
// (no tie: 2^48 / m is an odd multiple of 1/2 only for m a power of two, handled apart).
fn recip_rne(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let m = (bits & 0x7fffffu) | 0x800000u;
    let e = i32((bits >> 23u) & 0xffu);
    if (m == 0x800000u) {
        return ldexp(1.0, 127 - e);
    }
    var q = 0x80000000u / m;
    var r = 0x80000000u % m;
    for (var k = 0u; k < 2u; k++) {
        r = r << 8u;
        q = (q << 8u) | (r / m);
        r = r % m;
    }
    if (2u * r > m) {
        q += 1u;
    }
    return ldexp(f32(q), 103 - e);
}

// XNNPACK's "fp32" requantization (its qs8 / qs8_qc8w convolutions on x86): the int32
// accumulator to f32 (nearest even), times the f32 scale, rounded to nearest even (WGSL's
// round), plus the zero point, clamped to [lo, hi]. The product is rounded once on its own (no
// add follows it to contract with); the clamp before the i32 conversion keeps it in range.
fn q_fp32(acc: i32, scale: f32, zp: i32, lo: i32, hi: i32) -> i32 {
    let r = round(f32_rne(acc) * scale);
    return i32(clamp(r, f32(lo - zp), f32(hi - zp))) + zp;
}
