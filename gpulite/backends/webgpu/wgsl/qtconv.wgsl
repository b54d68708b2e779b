// TRANSPOSE_CONV on integer codes (kernels/qconv.py), gathered per output: dot(e, k0, k1) sums
// products k0..k1 of output element e, k = tap * in_c + channel (the OHWI filter's order); tap
// (ky, kx) reads the input pixel ((oy + pad_top - ky) / stride_h, ...) where that division is
// exact and in range, and adds nothing elsewhere.
//#include "qacc.wgsl"
//#include "nhwc.wgsl"

fn dot(e: u32, k0: u32, k1: u32) -> vec2<u32> {
    let o = out_pixel(e, P.out_c);
    let oc = o.c;
    let wb = oc * P.depth;
    var acc = $ACC();
    var k = k0;
    while (k < k1) {
        let tap = k / P.in_c;
        let end = min(k1, (tap + 1u) * P.in_c);
        let ty = i32(o.y) + P.pad_top - i32(tap / P.k_w);
        let tx = i32(o.x) + P.pad_left - i32(tap % P.k_w);
        let iy = ty / i32(P.stride_h);
        let ix = tx / i32(P.stride_w);
        if (ty >= 0 && tx >= 0 && ty % i32(P.stride_h) == 0 && tx % i32(P.stride_w) == 0
                && iy < i32(P.in_h) && ix < i32(P.in_w)) {
            let xb = in_index(o.b, u32(iy), u32(ix), P.in_c) - tap * P.in_c;
            for (var kk = k; kk < end; kk++) {
                acc = acc_add(acc, ($LX(P.x_off, xb + kk) - P.x_zp) * ($LW(P.w_off, wb + kk) - P.w_zp));
            }
        }
        k = end;
    }
    return acc_wide(acc);
}
