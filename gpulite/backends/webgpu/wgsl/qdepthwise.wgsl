// DEPTHWISE_CONV_2D on integer codes (kernels/qconv.py): dot(e, k0, k1) sums taps k0..k1 of
// output element e (channel oc reads input channel oc / P.mult; filter [1, KH, KW, out_c]);
// taps outside the input add nothing.
//#include "qacc.wgsl"
//#include "nhwc.wgsl"

fn dot(e: u32, k0: u32, k1: u32) -> vec2<u32> {
    let o = out_pixel(e, P.out_c);
    let oc = o.c;
    let ic = oc / P.mult;
    var acc = $ACC();
    for (var t = k0; t < k1; t++) {
        let iy = i32(o.y * P.stride_h + (t / P.k_w) * P.dil_h) - P.pad_top;
        let ix = i32(o.x * P.stride_w + (t % P.k_w) * P.dil_w) - P.pad_left;
        if (in_image(iy, ix)) {
            let x = $LX(P.x_off, in_index(o.b, u32(iy), u32(ix), P.in_c) + ic) - P.x_zp;
            acc = acc_add(acc, x * ($LW(P.w_off, t * P.out_c + oc) - P.w_zp));
        }
    }
    return acc_wide(acc);
}
