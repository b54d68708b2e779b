// RESIZE_BILINEAR, NHWC, one output element per thread, as TFLite's reference kernel:
// source coordinate (o + P.half) * scale - P.half, lower index clamped at 0 and upper at
// size - 1, weights from the distance to the (clamped) lower index.

fn run(i: u32) {
    let c = i % P.c;
    var r = i / P.c;
    let ox = r % P.out_w;
    r = r / P.out_w;
    let oy = r % P.out_h;
    let b = r / P.out_h;
    let fy = (f32(oy) + P.half) * P.scale_h - P.half;
    let fx = (f32(ox) + P.half) * P.scale_w - P.half;
    let y0 = max(i32(floor(fy)), 0);
    let x0 = max(i32(floor(fx)), 0);
    let y1 = min(i32(ceil(fy)), i32(P.in_h) - 1);
    let x1 = min(i32(ceil(fx)), i32(P.in_w) - 1);
    let dy = fy - f32(y0);
    let dx = fx - f32(x0);
    let base = P.x_off + b * P.in_h * P.in_w * P.c + c;
    let v00 = buf[base + (u32(y0) * P.in_w + u32(x0)) * P.c];
    let v01 = buf[base + (u32(y0) * P.in_w + u32(x1)) * P.c];
    let v10 = buf[base + (u32(y1) * P.in_w + u32(x0)) * P.c];
    let v11 = buf[base + (u32(y1) * P.in_w + u32(x1)) * P.c];
    buf[P.out_off + i] = v00 * (1.0 - dy) * (1.0 - dx) + v10 * dy * (1.0 - dx) + v01 * (1.0 - dy) * dx + v11 * dy * dx;
}
