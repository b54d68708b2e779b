// int8 / uint8 LOG_SOFTMAX, first pass: one thread per row stores the row's max code and
// logf of its table sum (qsoftmax_sum.wgsl, qlog.wgsl) at P.stats_off + 2 * row; the second
// pass (qlog_softmax.wgsl) writes the codes.
//#include "qmath.wgsl"
//#include "qlog.wgsl"
//#include "qsoftmax_sum.wgsl"

fn run(row: u32) {
    let base = row * P.depth;
    let mx = row_max(base);
    buf[P.stats_off + 2u * row] = bitcast<u32>(mx);
    buf[P.stats_off + 2u * row + 1u] = bitcast<u32>(ln_f32(row_sum(base, mx), P.log_tab));
}
