// int8 / uint8 L2_NORMALIZATION as LiteRT's integer kernel (the cpu's quantized_l2norm.py),
// after a row reduction left each row's sum of (x - zp)^2 at P.sums_off + row: out_code
// (qwords.wgsl) takes its inverse square root as a multiplier and shift
// (GetInvSqrtQuantizedMultiplierExp: five Newton-Raphson steps in gemmlowp's Q3 fixed point;
// computed again for every element, which costs less than a dispatch more) and rescales
// x - zp to the output's 1/128 scale (int8: q_mbqm with the shift + 7; uint8: 128 * (x - zp)
// rescaled, plus 128), clamped.
//#include "qmath.wgsl"

// SaturatingRoundingMultiplyByPOT<e> for e > 0.
fn shl_saturating(x: i32, e: u32) -> i32 {
    let threshold = (1 << (31u - e)) - 1;
    if (x > threshold) {
        return Q_INT32_MAX;
    }
    if (x < -threshold) {
        return Q_INT32_MIN;
    }
    return x << e;
}

// (multiplier, shift for q_mbqm) of 1 / sqrt(acc).
fn inv_sqrt(acc: i32) -> vec2<i32> {
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
        let y3 = shl_saturating(q_srdhm(q_srdhm(y, y), y), 6u);
        y = shl_saturating(q_srdhm(half_three, y) - q_srdhm(half_input, y3), 3u);
    }
    y = q_srdhm(y, 1518500250);
    if (shift < 0) {
        y = y << u32(-shift);
        shift = 0;
    }
    return vec2<i32>(y, -shift);
}

fn out_code(e: u32) -> i32 {
    let r = inv_sqrt(bitcast<i32>(buf[P.sums_off + e / P.depth]));
    let m = r.x;
    let shift = r.y;
    let d = $LOAD(P.x_off, e) - P.zp;
    return $OUT;
}
