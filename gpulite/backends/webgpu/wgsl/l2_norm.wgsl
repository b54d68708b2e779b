// L2_NORMALIZATION over the last axis, as TFLite's float kernel: out = x / max(sqrt(sum of
// squares), 1e-6). Rows are shared by P.split threads each (row_tree.wgsl).
//#include "row_tree.wgsl"

fn run_group(g: u32, t: u32) {
    let row = row_of(g, t);
    let live = row < P.rows;
    let base = row * P.depth;
    var sq = 0.0;
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            let v = buf[P.x_off + base + k];
            sq += v * v;
        }
    }
    let norm = max(sqrt(row_sum(t, sq)), 1e-6);
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            buf[P.out_off + base + k] = buf[P.x_off + base + k] / norm;
        }
    }
}
