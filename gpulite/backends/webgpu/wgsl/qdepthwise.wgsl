// DEPTHWISE_CONV_2D on integer codes (kernels/qconv.py): dot(e, k0, k1) sums taps k0..k1 of
// output element e (channel oc reads input channel oc / P.mult; filter [1, KH, KW, out_c]);
// taps outside the input add nothing.
//#include "qacc.wgsl"

fn dot(e: u32, k0: u32, k1: u32) -> vec2<u32> {
    let oc = e % P.out_c;
    let pix = e / P.out_c;
    let ox = pix % P.out_w;
    let oy = (pix / P.out_w) % P.out_h;
    let n = pix / (P.out_w * P.out_h);
    let ic = oc / P.mult;
    var acc = $ACC();
    for (var t = k0; t < k1; t++) {
        let iy = i32(oy * P.stride_h + (t / P.k_w) * P.dil_h) - P.pad_top;
        let ix = i32(ox * P.stride_w + (t % P.k_w) * P.dil_w) - P.pad_left;
        if (iy >= 0 && iy < i32(P.in_h) && ix >= 0 && ix < i32(P.in_w)) {
            let x = $LX(P.x_off, ((n * P.in_h + u32(iy)) * P.in_w + u32(ix)) * P.in_c + ic) - P.x_zp;
            acc = acc_add(acc, x * ($LW(P.w_off, t * P.out_c + oc) - P.w_zp));
        }
    }
    return acc_wide(acc);
}
