// RESIZE_BILINEAR, NHWC, one output element per thread, as TFLite's reference kernel:
// source coordinate (o + P.half) * scale - P.half, lower index clamped at 0 and upper at
// size - 1, weights from the distance to the (clamped) lower index.
//#include "nhwc.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.c);
    let fy = (f32(p.y) + P.half) * P.scale_h - P.half;
    let fx = (f32(p.x) + P.half) * P.scale_w - P.half;
    let y0 = u32(max(i32(floor(fy)), 0));
    let x0 = u32(max(i32(floor(fx)), 0));
    let y1 = u32(min(i32(ceil(fy)), i32(P.in_h) - 1));
    let x1 = u32(min(i32(ceil(fx)), i32(P.in_w) - 1));
    let dy = fy - f32(y0);
    let dx = fx - f32(x0);
    let base = P.x_off + p.c;
    let v00 = buf[base + in_index(p.b, y0, x0, P.c)];
    let v01 = buf[base + in_index(p.b, y0, x1, P.c)];
    let v10 = buf[base + in_index(p.b, y1, x0, P.c)];
    let v11 = buf[base + in_index(p.b, y1, x1, P.c)];
    buf[P.out_off + i] = v00 * (1.0 - dy) * (1.0 - dx) + v10 * dy * (1.0 - dx) + v01 * (1.0 - dy) * dx + v11 * dy * dx;
}
