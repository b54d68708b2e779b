// int8 / uint8 SOFTMAX, first pass: one thread per row stores the row's max code and
// 1 / (sum * output_scale) at P.stats_off + 2 * row (qsoftmax_sum.wgsl); the second pass
// (qsoftmax.wgsl) writes the codes.
//#include "qmath.wgsl"
//#include "qfloat.wgsl"
//#include "qsoftmax_sum.wgsl"

fn run(row: u32) {
    let base = row * P.depth;
    let mx = row_max(base);
    let sum = row_sum(base, mx);
    buf[P.stats_off + 2u * row] = bitcast<u32>(mx);
    buf[P.stats_off + 2u * row + 1u] = bitcast<u32>(recip_rne(mul_rounded(sum, P.out_scale, P.zero)));
}
