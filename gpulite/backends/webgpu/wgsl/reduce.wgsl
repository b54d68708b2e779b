// Reduction over the middle axis of [outer, r, inner] (MEAN, SUM, REDUCE_MAX): one output
// element per thread, walking r with stride inner.

fn run(i: u32) {
    let o = i / P.inner;
    let k = i % P.inner;
    var acc = $INIT;
    var p = P.x_off + o * P.r * P.inner + k;
    for (var j = 0u; j < P.r; j++) {
        let v = buf[p];
        acc = $REDUCE;
        p += P.inner;
    }
    buf[P.out_off + i] = $FINISH;
}
