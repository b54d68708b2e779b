// DEPTHWISE_CONV_2D on 8-bit codes, four channels at a time (the word path of kernels/qconv.py:
// multiplier 1, channels % 4 == 0): dot4(e0, k0, k1) sums taps k0..k1 of output elements
// e0..e0+3; one word of the input pixel and one of the [1, KH, KW, C] filter per tap.
//#include "qmath.wgsl"

fn dot4(e0: u32, k0: u32, k1: u32) -> vec4<i32> {
    let oc0 = e0 % P.out_c;
    let pix = e0 / P.out_c;
    let ox = pix % P.out_w;
    let oy = (pix / P.out_w) % P.out_h;
    let n = pix / (P.out_w * P.out_h);
    var acc = vec4<i32>(0);
    for (var t = k0; t < k1; t++) {
        let iy = i32(oy * P.stride_h + (t / P.k_w) * P.dil_h) - P.pad_top;
        let ix = i32(ox * P.stride_w + (t % P.k_w) * P.dil_w) - P.pad_left;
        if (iy >= 0 && iy < i32(P.in_h) && ix >= 0 && ix < i32(P.in_w)) {
            let x = $UX(buf[P.x_off + (((n * P.in_h + u32(iy)) * P.in_w + u32(ix)) * P.in_c + oc0) / 4u]) - P.x_zp;
            acc += x * ($UW(buf[P.w_off + (t * P.out_c + oc0) / 4u]) - P.w_zp);
        }
    }
    return acc;
}
