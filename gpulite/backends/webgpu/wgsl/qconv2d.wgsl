// CONV_2D (grouped too) on integer codes (kernels/qconv.py): dot(e, k0, k1) sums products k0..k1
// of output element e over its window, k = tap * group_c + channel (the OHWI filter's order);
// taps outside the input add nothing (TFLite pads with the input zero point). $LX / $LW read
// input / filter codes (qmath.wgsl).
//#include "qacc.wgsl"
//#include "nhwc.wgsl"

fn dot(e: u32, k0: u32, k1: u32) -> vec2<u32> {
    let o = out_pixel(e, P.out_c);
    let oc = o.c;
    let ic0 = (oc / P.group_out) * P.group_c;
    let wb = oc * P.depth;
    var acc = $ACC();
    var k = k0;
    while (k < k1) {
        let tap = k / P.group_c;
        let end = min(k1, (tap + 1u) * P.group_c);
        let iy = i32(o.y * P.stride_h + (tap / P.k_w) * P.dil_h) - P.pad_top;
        let ix = i32(o.x * P.stride_w + (tap % P.k_w) * P.dil_w) - P.pad_left;
        if (in_image(iy, ix)) {
            // element of k's channel: xb + k (u32 arithmetic wraps back into range)
            let xb = in_index(o.b, u32(iy), u32(ix), P.in_c) + ic0 - tap * P.group_c;
            for (var kk = k; kk < end; kk++) {
                acc = acc_add(acc, ($LX(P.x_off, xb + kk) - P.x_zp) * ($LW(P.w_off, wb + kk) - P.w_zp));
            }
        }
        k = end;
    }
    return acc_wide(acc);
}
