// Float helpers of the elementwise kernels: `//#include "math_fns.wgsl"`.

// tanh without overflow: exp of -2|x| only (WGSL's tanh may give NaN for large |x|).
fn tanh_safe(x: f32) -> f32 {
    let t = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - t) / (1.0 + t);
}

// erfc(x), relative error < 1.2e-7 in exact arithmetic (Numerical Recipes' erfcc, the CPU
// kernel's formula): t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), z = |x|; 2 - that for x < 0.
fn erfc_nr(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    var p = 0.17087277;
    p = p * t - 0.82215223;
    p = p * t + 1.48851587;
    p = p * t - 1.13520398;
    p = p * t + 0.27886807;
    p = p * t - 0.18628806;
    p = p * t + 0.09678418;
    p = p * t + 0.37409196;
    p = p * t + 1.00002368;
    p = p * t - 1.26551223;
    let r = t * exp(-z * z + p);
    return select(2.0 - r, r, x >= 0.0);
}

// C's fmod(a, b) (exact): the truncated quotient's remainder by one fused multiply-add,
// corrected when a / b rounded across an integer.
fn fmod_c(a: f32, b: f32) -> f32 {
    let q = trunc(a / b);
    var r = fma(-b, q, a);
    let m = abs(b);
    if (r != 0.0 && (r < 0.0) != (a < 0.0)) {
        r += select(-m, m, a >= 0.0);
    } else if (abs(r) >= m) {
        r -= select(-m, m, a >= 0.0);
    }
    return r;
}

// C's pow(a, b) for the cases WGSL's pow leaves undefined: b == 0 gives 1, a negative base
// needs an integer exponent (NaN otherwise) and takes the sign of an odd one.
fn pow_c(a: f32, b: f32) -> f32 {
    if (b == 0.0) {
        return 1.0;
    }
    let m = pow(abs(a), b);
    if (a >= 0.0) {
        return m;
    }
    if (fract(b) != 0.0) {
        return bitcast<f32>(0x7fc00000u);
    }
    return select(m, -m, fract(b * 0.5) != 0.0);
}

// Integer floor division and modulo (the divisor is never 0: kernels check a constant one).
fn floor_div_i(a: i32, b: i32) -> i32 {
    let q = a / b;
    return select(q, q - 1, (a % b != 0) && ((a < 0) != (b < 0)));
}

fn floor_mod_i(a: i32, b: i32) -> i32 {
    let r = a % b;
    return select(r, r + b, (r != 0) && ((r < 0) != (b < 0)));
}

// TFLite's float FLOOR_MOD: C's fmod moved to the divisor's sign.
fn floor_mod_f(a: f32, b: f32) -> f32 {
    let r = fmod_c(a, b);
    return select(r, r + b, (r != 0.0) && ((r < 0.0) != (b < 0.0)));
}

// Word h (0: low, 1: high) of C's static_cast<int64_t>(x): truncation toward zero. Beyond
// +-2^31 a float32 is an integer whose bits below 2^32 fit its mantissa, so the split is exact.
fn f32_to_i64(x: f32, h: u32) -> u32 {
    if (abs(x) < 2147483648.0) {
        let q = i32(x);
        return select(bitcast<u32>(q >> 31u), bitcast<u32>(q), h == 0u);
    }
    let hi = floor(x / 4294967296.0);
    return select(bitcast<u32>(i32(hi)), u32(x - hi * 4294967296.0), h == 0u);
}
