// NHWC window geometry of the integer convolutions (qconv2d.wgsl, qconv2d4.wgsl,
// qdepthwise.wgsl, qtconv.wgsl): `//#include "qwindow.wgsl"`, from P's in_h, in_w, in_c,
// out_h and out_w.

// Output pixel pix (of the flattened N x out_h x out_w) as (x, y, image).
fn q_out_pixel(pix: u32) -> vec3<u32> {
    return vec3<u32>(pix % P.out_w, (pix / P.out_w) % P.out_h, pix / (P.out_w * P.out_h));
}

// Whether input cell (iy, ix) lies inside the image.
fn q_inside(iy: i32, ix: i32) -> bool {
    return iy >= 0 && iy < i32(P.in_h) && ix >= 0 && ix < i32(P.in_w);
}

// The element of channel 0 of input cell (iy, ix) (inside) of image n.
fn q_in_cell(n: u32, iy: i32, ix: i32) -> u32 {
    return ((n * P.in_h + u32(iy)) * P.in_w + u32(ix)) * P.in_c;
}
