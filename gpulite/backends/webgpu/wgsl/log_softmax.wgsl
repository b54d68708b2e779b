// LOG_SOFTMAX over the last axis, one row of P.depth values per thread, as TFLite's float
// kernel: out = (x - max) - log(sum(exp(x - max))).

fn run(i: u32) {
    let base = i * P.depth;
    var m = buf[P.x_off + base];
    for (var k = 1u; k < P.depth; k++) {
        m = max(m, buf[P.x_off + base + k]);
    }
    var sum = 0.0;
    for (var k = 0u; k < P.depth; k++) {
        sum += exp(buf[P.x_off + base + k] - m);
    }
    let lse = log(sum);
    for (var k = 0u; k < P.depth; k++) {
        buf[P.out_off + base + k] = (buf[P.x_off + base + k] - m) - lse;
    }
}
