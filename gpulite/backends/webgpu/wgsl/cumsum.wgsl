// CUMSUM: one line of P.len elements (stride P.inner) per thread, accumulated in order from
// the start (or the end, P.reverse); an exclusive sum writes the total before adding.

fn run(i: u32) {
    let base = (i / P.inner) * P.len * P.inner + i % P.inner;
    var acc = $ZERO;
    for (var k = 0u; k < P.len; k++) {
        let p = base + select(k, P.len - 1u - k, P.reverse != 0u) * P.inner;
        let v = buf[P.x_off + p];
        if (P.exclusive != 0u) {
            buf[P.out_off + p] = acc;
            acc = acc + v;
        } else {
            acc = acc + v;
            buf[P.out_off + p] = acc;
        }
    }
}
