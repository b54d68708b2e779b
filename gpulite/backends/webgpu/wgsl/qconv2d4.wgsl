// CONV_2D on 8-bit codes, four output channels and four input channels at a time (the word path
// of kernels/qconv.py: in_c % 4 == 0, out_c % 4 == 0, no groups): dot4(e0, k0, k1) sums products
// k0..k1 (multiples of 4) of output elements e0..e0+3, k = tap * in_c + channel. One input word
// holds four channels of a pixel; the filter, re-laid out as [K, out_c], one word per k holds
// the four output channels' weights. Taps outside the input add nothing.
//#include "qmath.wgsl"
//#include "nhwc.wgsl"

fn dot4(e0: u32, k0: u32, k1: u32) -> vec4<i32> {
    let o = out_pixel(e0, P.out_c);
    let oc0 = o.c;
    let n4 = P.out_c / 4u;
    let wq = P.w_off + oc0 / 4u;
    var acc = vec4<i32>(0);
    var k = k0;
    while (k < k1) {
        let tap = k / P.in_c;
        let end = min(k1, (tap + 1u) * P.in_c);
        let iy = i32(o.y * P.stride_h + (tap / P.k_w) * P.dil_h) - P.pad_top;
        let ix = i32(o.x * P.stride_w + (tap % P.k_w) * P.dil_w) - P.pad_left;
        if (in_image(iy, ix)) {
            // element of k's channel: xb + k (u32 arithmetic wraps back into range)
            let xb = in_index(o.b, u32(iy), u32(ix), P.in_c) - tap * P.in_c;
            for (var kk = k; kk < end; kk += 4u) {
                let x = $UX(buf[P.x_off + (xb + kk) / 4u]) - P.x_zp;
                let w = wq + kk * n4;
                acc += x.x * ($UW(buf[w]) - P.w_zp) + x.y * ($UW(buf[w + n4]) - P.w_zp)
                     + x.z * ($UW(buf[w + 2u * n4]) - P.w_zp) + x.w * ($UW(buf[w + 3u * n4]) - P.w_zp);
            }
        }
        k = end;
    }
    return acc;
}
