// SOFTMAX over the last axis: one row of P.depth values per thread, as TFLite's float kernel:
// the row max is subtracted first (so exp never overflows), then out = exp((x - max) * beta)
// / sum of those exps.

fn run(i: u32) {
    let base = i * P.depth;
    var m = buf[P.x_off + base];
    for (var k = 1u; k < P.depth; k++) {
        m = max(m, buf[P.x_off + base + k]);
    }
    var sum = 0.0;
    for (var k = 0u; k < P.depth; k++) {
        let e = exp((buf[P.x_off + base + k] - m) * P.beta);
        buf[P.out_off + base + k] = e;
        sum += e;
    }
    let inv = 1.0 / sum;
    for (var k = 0u; k < P.depth; k++) {
        buf[P.out_off + base + k] *= inv;
    }
}
