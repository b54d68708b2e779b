// LOG_SOFTMAX over the last axis, as TFLite's float kernel: out = (x - max) - log(sum(exp(x
// - max))). Rows are shared by P.split threads each (row_tree.wgsl).
//#include "row_tree.wgsl"

fn run_group(g: u32, t: u32) {
    let row = row_of(g, t);
    let live = row < P.rows;
    let base = row * P.depth;
    let m = row_input_max(t, live, P.x_off + base);
    var sum = 0.0;
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            sum += exp(buf[P.x_off + base + k] - m);
        }
    }
    let lse = log(row_sum(t, sum));
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            buf[P.out_off + base + k] = (buf[P.x_off + base + k] - m) - lse;
        }
    }
}
