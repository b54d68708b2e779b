// TransformTensorBilinear v2 (MediaPipe), one output element per thread: output pixel (x, y)
// samples the (1, H, W, C) input at (row0 . (x, y, 0, 1), row1 . (x, y, 0, 1)) of the 4x4
// matrix, whose offsets get MediaPipe's half-pixel correction row[3] += 0.5 row[0] +
// 0.5 row[1] - 0.5. Dot products in float32 term by term in MediaPipe's order, so the
// in/out-of-range decisions at the edges fall the same way. Outside [0, W-1] x [0, H-1]: 0;
// a corner past the last row/column reads 0 (with weight 0 when exactly on the edge).
// P.zero is 0.0 from the uniforms: the z term m2 * 0 must stay in (NaN for a non-finite m2),
// and a literal 0.0 would let the compiler fold it away.

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;  // integer test: survives fast math
}

fn read(y: u32, x: u32, c: u32) -> f32 {
    if (y >= P.in_h || x >= P.in_w) {
        return 0.0;
    }
    return buf[P.x_off + (y * P.in_w + x) * P.c + c];
}

fn coord(m: u32, fx: f32, fy: f32) -> f32 {
    let r0 = buf[m];
    let r1 = buf[m + 1u];
    let r3 = r0 * 0.5 + r1 * 0.5 - 0.5 + buf[m + 3u];
    return r0 * fx + r1 * fy + buf[m + 2u] * P.zero + r3;
}

fn run(i: u32) {
    let c = i % P.c;
    let pix = i / P.c;
    let fx = f32(pix % P.out_w);
    let fy = f32(pix / P.out_w);
    let tx = coord(P.m_off, fx, fy);
    let ty = coord(P.m_off + 4u, fx, fy);
    if (is_nan(tx) || is_nan(ty)) {  // "inside" in the C++ (every comparison is false): NaN out
        buf[P.out_off + i] = bitcast<f32>(0x7fc00000u);
        return;
    }
    if (tx < 0.0 || tx > f32(P.in_w - 1u) || ty < 0.0 || ty > f32(P.in_h - 1u)) {
        buf[P.out_off + i] = 0.0;
        return;
    }
    let x0 = floor(tx);
    let y0 = floor(ty);
    let right = tx - x0;
    let low = ty - y0;
    let ix = u32(x0);
    let iy = u32(y0);
    let upper = read(iy, ix, c) * (1.0 - right) + read(iy, ix + 1u, c) * right;
    let lower = read(iy + 1u, ix, c) * (1.0 - right) + read(iy + 1u, ix + 1u, c) * right;
    buf[P.out_off + i] = lower * low + upper * (1.0 - low);
}
