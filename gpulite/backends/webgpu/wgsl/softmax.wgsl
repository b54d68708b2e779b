// SOFTMAX over the last axis, as TFLite's float kernel: the row max is subtracted first (so
// exp never overflows), then out = exp((x - max) * beta) * (1 / sum of those exps). Rows are
// shared by P.split threads each (row_tree.wgsl); exps are computed again for the output
// rather than stored and scaled, so the output may not alias the input but is written once.
//#include "row_tree.wgsl"

fn run_group(g: u32, t: u32) {
    let row = row_of(g, t);
    let live = row < P.rows;
    let base = row * P.depth;
    let m = row_input_max(t, live, P.x_off + base);
    var sum = 0.0;
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            sum += exp((buf[P.x_off + base + k] - m) * P.beta);
        }
    }
    let inv = 1.0 / row_sum(t, sum);
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            buf[P.out_off + base + k] = exp((buf[P.x_off + base + k] - m) * P.beta) * inv;
        }
    }
}
