// int8 / uint8 LOG_SOFTMAX, second pass (qwords.wgsl), as LiteRT's optimized LogSoftmax: from
// the row's max code and log of its sum (qlog_softmax_rows.wgsl), in float32,
// rint(s_in / s_out * x - (s_in * max + log_sum) / s_out) + zp, clamped; s_out is 1/16, so
// the division is an exact multiplication by 16.
//#include "qfloat.wgsl"

fn out_code(e: u32) -> i32 {
    let s = P.stats_off + 2u * (e / P.depth);
    let pre = (mul_rounded(P.in_scale, f32(bitcast<i32>(buf[s])), P.zero) + bitcast<f32>(buf[s + 1u])) * 16.0;
    let lp = mul_rounded(P.ratio, f32($LOAD(P.x_off, e)), P.zero) - pre;
    return clamp(i32(round(lp)) + P.zp, P.qmin, P.qmax);
}
