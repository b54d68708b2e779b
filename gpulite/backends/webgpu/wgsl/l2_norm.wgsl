// L2_NORMALIZATION over the last axis, one row of P.depth values per thread, as TFLite's
// float kernel: out = x / max(sqrt(sum of squares), 1e-6).

fn run(i: u32) {
    let base = i * P.depth;
    var sq = 0.0;
    for (var k = 0u; k < P.depth; k++) {
        let v = buf[P.x_off + base + k];
        sq += v * v;
    }
    let norm = max(sqrt(sq), 1e-6);
    for (var k = 0u; k < P.depth; k++) {
        buf[P.out_off + base + k] = buf[P.x_off + base + k] / norm;
    }
}
