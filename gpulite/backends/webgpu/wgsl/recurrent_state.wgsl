// The output state after a sequence: h[b, k] = out[last step, b, k], one thread per value.

fn run(i: u32) {
    let b = i / P.width;
    let k = i % P.width;
    buf[P.h_off + i] = buf[P.src_off + b * P.src_bs + k];
}
