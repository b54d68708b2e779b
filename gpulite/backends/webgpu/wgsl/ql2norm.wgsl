// int8 / uint8 L2_NORMALIZATION as LiteRT's integer kernel (the cpu's quantized_l2norm.py),
// after a row reduction left each row's sum of (x - zp)^2 at P.sums_off + row: out_code
// (qwords.wgsl) takes its inverse square root as a multiplier and shift (qmath.wgsl's
// q_inv_sqrt; computed again for every element, which costs less than a dispatch more) and rescales
// x - zp to the output's 1/128 scale (int8: q_mbqm with the shift + 7; uint8: 128 * (x - zp)
// rescaled, plus 128), clamped.
//#include "qmath.wgsl"

fn out_code(e: u32) -> i32 {
    let r = q_inv_sqrt(bitcast<i32>(buf[P.sums_off + e / P.depth]));
    let m = r.x;
    let shift = r.y;
    let d = $LOAD(P.x_off, e) - P.zp;
    return $OUT;
}
