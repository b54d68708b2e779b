// LOCAL_RESPONSE_NORMALIZATION over the last axis, one element per thread, as TFLite's float
// kernel: out = x * pow(bias + alpha * (sum of x^2 over channels c - radius .. c + radius), -beta).

fn run(i: u32) {
    let c = i % P.depth;
    let row = i - c;
    let lo = u32(max(i32(c) - P.radius, 0));
    let hi = u32(min(i32(c) + P.radius + 1, i32(P.depth)));
    var sq = 0.0;
    for (var k = lo; k < hi; k++) {
        let v = buf[P.x_off + row + k];
        sq += v * v;
    }
    buf[P.out_off + i] = buf[P.x_off + i] * pow(P.bias + P.alpha * sq, -P.beta);
}
