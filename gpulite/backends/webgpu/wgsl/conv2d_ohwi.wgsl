// CONV_2D with weights (and bias) computed at run time, NHWC: one output element per thread,
// reading TFLite's OHWI weights where they lie (no allocate-time re-layout is possible).

fn run(i: u32) {
    let oc = i % P.out_c;
    var r = i / P.out_c;
    let ox = r % P.out_w;
    r = r / P.out_w;
    let oy = r % P.out_h;
    let b = r / P.out_h;
    var acc = buf[P.bias_off + oc * P.bias_step];
    let iy0 = i32(oy * P.stride_h) - P.pad_top;
    let ix0 = i32(ox * P.stride_w) - P.pad_left;
    for (var ky = 0u; ky < P.k_h; ky++) {
        let iy = iy0 + i32(ky * P.dil_h);
        if (iy < 0 || iy >= i32(P.in_h)) {
            continue;
        }
        for (var kx = 0u; kx < P.k_w; kx++) {
            let ix = ix0 + i32(kx * P.dil_w);
            if (ix < 0 || ix >= i32(P.in_w)) {
                continue;
            }
            let xb = P.x_off + ((b * P.in_h + u32(iy)) * P.in_w + u32(ix)) * P.in_c;
            let wb = P.w_off + ((oc * P.k_h + ky) * P.k_w + kx) * P.in_c;
            for (var c = 0u; c < P.in_c; c++) {
                acc += buf[xb + c] * buf[wb + c];
            }
        }
    }
    buf[P.out_off + i] = act(acc);
}
