// Integer elementwise binary ops with broadcasting (kernels/qbinary.py): LiteRT's integer
// arithmetic on int8/uint8/int16 codes, bit for bit the cpu kernels' (cpu/kernels/quantized_binary.py,
// quantized_int16.py, quantized_squared_difference.py, quantized_activations.py's PRELU, logic.py's
// comparisons, whose bool output is packed like int8). Output
// element e is $BODY(a, b), or $TAIL(a, b) where LiteRT's builtin loops compute it in their scalar
// loop (e % P.run >= P.run - P.run % P.block). P.shape is the output shape collapsed to 4 dims,
// P.sa / P.sb the operands' element strides (0 along a broadcast dim); qwords.wgsl packs the
// codes, a thread a word. The uniform fields mean what each function says.
//#include "coords.wgsl"
//#include "qmath.wgsl"

// x wrapped to int16 (its low 16 bits, sign-extended).
fn wrap16(x: i32) -> i32 {
    return bitcast<i32>(bitcast<u32>(x) << 16u) >> 16u;
}

// x << n for n >= 0, else x >> -n (arithmetic).
fn shl(x: i32, n: i32) -> i32 {
    if (n >= 0) {
        return x << u32(n);
    }
    return x >> u32(-n);
}

// XNNPACK qs8/qu8-vadd (SUB: m2 negated): ((bias + a * m1 + b * m2) >> eo) + zo; the sum fits
// int32 (only intermediates wrap, harmlessly).
fn xnn_add(a: i32, b: i32) -> i32 {
    return clamp(((P.bias + a * P.m1 + b * P.m2) >> u32(P.eo)) + P.zo, P.lo, P.hi);
}

// XNNPACK qs8/qu8-vmul: (a - z1) * (b - z2) (exact in f32) times fscale, rounded half to even.
fn xnn_mul(a: i32, b: i32) -> i32 {
    return clamp(i32(round(f32((a - P.z1) * (b - P.z2)) * P.fscale)) + P.zo, P.lo, P.hi);
}

// TFLite's scalar 8-bit ADD (SUB: m2 negated): both inputs << 20, rescaled, summed, rescaled.
fn add_scalar(a: i32, b: i32) -> i32 {
    let x = q_mbqm((a - P.z1) << 20u, P.m1, P.e1);
    let y = q_mbqm((b - P.z2) << 20u, P.m2, P.e2);
    return q_out(q_mbqm(x + y, P.mo, P.eo), P.zo, P.lo, P.hi);
}

// TFLite's NEON 8-bit ADD body: int8 folds the shift into the multiply (n1 = 20 + e1), uint8
// multiplies first and shifts right truncating; the sum wraps in int32, the result narrows
// through int16.
fn add_neon_i8(a: i32, b: i32) -> i32 {
    let total = q_srdhm(shl(a - P.z1, P.n1), P.m1) + q_srdhm(shl(b - P.z2, P.n2), P.m2);
    return clamp(wrap16(wrap16(q_rdbpot(q_srdhm(total, P.mo), -P.eo)) + P.zo), P.lo, P.hi);
}

fn add_neon_u8(a: i32, b: i32) -> i32 {
    let total = (q_srdhm((a - P.z1) << 20u, P.m1) >> u32(-P.e1)) + (q_srdhm((b - P.z2) << 20u, P.m2) >> u32(-P.e2));
    return clamp(wrap16(wrap16(q_rdbpot(q_srdhm(total, P.mo), -P.eo)) + P.zo), P.lo, P.hi);
}

// TFLite's scalar 8-bit MUL, and its NEON body (saturated to int16, the zero point added in int16).
fn mul_scalar(a: i32, b: i32) -> i32 {
    return q_out(q_mbqm((a - P.z1) * (b - P.z2), P.m1, P.e1), P.zo, P.lo, P.hi);
}

fn mul_neon(a: i32, b: i32) -> i32 {
    let raw = clamp(q_mbqm((a - P.z1) * (b - P.z2), P.m1, P.e1), -32768, 32767);
    return clamp(wrap16(raw + P.zo), P.lo, P.hi);
}

// int8 SQUARED_DIFFERENCE: inputs << 7 rescaled to half the larger scale, the difference squared
// (within int32: each side is at most 255 * 128 / 2), rescaled.
fn sqdiff(a: i32, b: i32) -> i32 {
    let d = q_mbqm((a - P.z1) << 7u, P.m1, P.e1) - q_mbqm((b - P.z2) << 7u, P.m2, P.e2);
    return q_out(q_mbqm(d * d, P.mo, P.eo), P.zo, P.lo, P.hi);
}

// int16 ADD / SUB (zero points 0): the reference formula (inputs << 15) and the optimized loop's
// (the shift folded into the multiply: n1 = 15 + e1); int16 MUL.
fn add16_ref(a: i32, b: i32) -> i32 {
    let x = q_mbqm(a << 15u, P.m1, P.e1);
    let y = q_mbqm(b << 15u, P.m2, P.e2);
    return clamp(q_mbqm(x + y, P.mo, P.eo), P.lo, P.hi);
}

fn add16_opt(a: i32, b: i32) -> i32 {
    let total = q_srdhm(shl(a, P.n1), P.m1) + q_srdhm(shl(b, P.n2), P.m2);
    return clamp(q_rdbpot(q_srdhm(total, P.mo), -P.eo), P.lo, P.hi);
}

fn mul16(a: i32, b: i32) -> i32 {
    return clamp(q_mbqm(a * b, P.m1, P.e1), P.lo, P.hi);
}

// PRELU (b is alpha; int8 for an int16 x): x - z1 rescaled by m1 where it is >= 0, else times
// (alpha - z2) by m2 (the product within int32: at most 2^16 * 2^8).
fn prelu(a: i32, b: i32) -> i32 {
    let v = a - P.z1;
    if (v >= 0) {
        return q_out(q_mbqm(v, P.m1, P.e1), P.zo, P.lo, P.hi);
    }
    return q_out(q_mbqm(v * (b - P.z2), P.m2, P.e2), P.zo, P.lo, P.hi);
}

// Comparisons (bool output, 1 or 0): inputs as LiteRT rescales them (8-bit; quantized int16 for
// (NOT_)EQUAL), (x - z) << 8 by each input's scale as a Q31 multiplier (ComparisonWithScaling);
// or the codes themselves.
fn cmp_scaled(a: i32, b: i32) -> i32 {
    return select(0, 1, q_mbqm((a - P.z1) << 8u, P.m1, P.e1) $CMP q_mbqm((b - P.z2) << 8u, P.m2, P.e2));
}

fn cmp_codes(a: i32, b: i32) -> i32 {
    return select(0, 1, a $CMP b);
}

fn out_code(e: u32) -> i32 {
    let c = coords4(e, P.shape);
    let a = ${LOAD_A}(P.a_off, dot(c, P.sa));
    let b = ${LOAD_B}(P.b_off, dot(c, P.sb));
    if (e % P.run >= P.run - P.run % P.block) {
        return ${TAIL}(a, b);
    }
    return ${BODY}(a, b);
}
