// TransformLandmarks v2 (MediaPipe), one landmark per thread: (x, y) -> the matrix's first two
// rows . (x, y, 0, 1), in float32 term by term in MediaPipe's order; a third coordinate is
// copied. P.zero is 0.0 from the uniforms, so the z term (NaN for a non-finite m2) is not
// folded away by the compiler.

fn row(m: u32, x: f32, y: f32) -> f32 {
    return buf[m] * x + buf[m + 1u] * y + buf[m + 2u] * P.zero + buf[m + 3u];
}

fn run(i: u32) {
    let src = P.lm_off + i * P.dims;
    let dst = P.out_off + i * P.dims;
    let x = buf[src];
    let y = buf[src + 1u];
    buf[dst] = row(P.m_off, x, y);
    buf[dst + 1u] = row(P.m_off + 4u, x, y);
    if (P.dims == 3u) {
        buf[dst + 2u] = buf[src + 2u];
    }
}
