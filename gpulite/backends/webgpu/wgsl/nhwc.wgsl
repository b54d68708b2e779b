// NHWC index arithmetic shared by the window and layout kernels: `//#include "nhwc.wgsl"`.
// Reads P.out_h, P.out_w (the output's rows and columns) and P.in_h, P.in_w (the input's).
//#include "coords.wgsl"

// Where one output thread sits: batch b, row y, column x, and c, its index in the innermost
// dimension (a channel, or a group of channels when a thread computes several).
struct Pixel {
    b: u32,
    y: u32,
    x: u32,
    c: u32,
}

// The place of element i in an output of [N, P.out_h, P.out_w, inner] elements.
fn out_pixel(i: u32, inner: u32) -> Pixel {
    let c = coords4(i, vec4<u32>(0u, P.out_h, P.out_w, inner));
    return Pixel(c.x, c.y, c.z, c.w);
}

// Whether input row y, column x (negative in the padding) lies inside the input.
fn in_image(y: i32, x: i32) -> bool {
    return y >= 0 && y < i32(P.in_h) && x >= 0 && x < i32(P.in_w);
}

// Index of the first element of input pixel (b, y, x), with ch elements per pixel.
fn in_index(b: u32, y: u32, x: u32, ch: u32) -> u32 {
    return ((b * P.in_h + y) * P.in_w + x) * ch;
}

// Index of the first element of output pixel p, with ch elements per pixel.
fn out_index(p: Pixel, ch: u32) -> u32 {
    return ((p.b * P.out_h + p.y) * P.out_w + p.x) * ch;
}
