// float32 RESIZE_BILINEAR as LiteRT's optimized builtin kernel runs it (where XNNPACK declines a
// size computed at run time; cpu/kernels/resize.py's _bilinear_builtin), one output element per
// thread. P.two_x: ResizeBilinear2x2, the input pixel a, its right neighbour b, the one below c
// and below-right d (edges repeated): a, (a + b) / 2, bl = (a + c) / 2, (bl + (b + d) / 2) / 2.
// Otherwise ResizeBilinearGeneric: per axis a table of [lower index, upper index, weight of the
// lower, weight of the upper] (the cpu kernel's builtin_weights, f32 bits), and from zero
// out += in * s over the corners (y0, x0), (y0, x1), (y1, x0), (y1, x1), s the product of the
// row's and the column's weight; every product and partial sum rounded on its own (mul_rounded,
// by 1.0 for the sums: no FMA, no regrouping).
//#include "nhwc.wgsl"
//#include "qfloat.wgsl"

fn pix(b: u32, y: u32, x: u32, c: u32) -> f32 {
    return buf[P.x_off + in_index(b, y, x, P.c) + c];
}

fn corner(p: Pixel, y: u32, x: u32, s: f32) -> f32 {
    return mul_rounded(pix(p.b, y, x, p.c), s, P.zero);
}

fn run(i: u32) {
    let p = out_pixel(i, P.c);
    if (P.two_x != 0u) {
        let y = p.y / 2u;
        let x = p.x / 2u;
        let y1 = min(y + 1u, P.in_h - 1u);
        let x1 = min(x + 1u, P.in_w - 1u);
        let a = pix(p.b, y, x, p.c);
        var v = a;
        if ((p.y & 1u) == 0u) {
            if ((p.x & 1u) == 1u) {
                v = (a + pix(p.b, y, x1, p.c)) * 0.5;
            }
        } else {
            let bl = (a + pix(p.b, y1, x, p.c)) * 0.5;
            v = bl;
            if ((p.x & 1u) == 1u) {
                v = (bl + (pix(p.b, y, x1, p.c) + pix(p.b, y1, x1, p.c)) * 0.5) * 0.5;
            }
        }
        buf[P.out_off + i] = v;
        return;
    }
    let ty = P.ytab_off + 4u * p.y;
    let tx = P.xtab_off + 4u * p.x;
    let y0 = bitcast<u32>(buf[ty]);
    let y1 = bitcast<u32>(buf[ty + 1u]);
    let x0 = bitcast<u32>(buf[tx]);
    let x1 = bitcast<u32>(buf[tx + 1u]);
    let wy0 = buf[ty + 2u];
    let wy1 = buf[ty + 3u];
    let wx0 = buf[tx + 2u];
    let wx1 = buf[tx + 3u];
    var acc = corner(p, y0, x0, mul_rounded(wy0, wx0, P.zero));
    acc = mul_rounded(acc + corner(p, y0, x1, mul_rounded(wy0, wx1, P.zero)), 1.0, P.zero);
    acc = mul_rounded(acc + corner(p, y1, x0, mul_rounded(wy1, wx0, P.zero)), 1.0, P.zero);
    buf[P.out_off + i] = acc + corner(p, y1, x1, mul_rounded(wy1, wx1, P.zero));
}
