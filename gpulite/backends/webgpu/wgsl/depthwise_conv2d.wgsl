// DEPTHWISE_CONV_2D, NHWC, one output element per thread (bias and activation fused).
// Weights keep TFLite's [1, KH, KW, Cout] layout; output channel oc reads input channel
// oc / multiplier. Channels vary fastest across threads, so neighbours read neighbours.
// Weights and bias through wt (float16 in fp16 plans).

// finish(): the fused activation, or a fused PReLU with per-channel alpha (conv.py).
fn finish(v: f32, c: u32) -> f32 {
    $FINISH
}

fn run(i: u32) {
    let oc = i % P.out_c;
    var r = i / P.out_c;
    let ox = r % P.out_w;
    r = r / P.out_w;
    let oy = r % P.out_h;
    let b = r / P.out_h;
    let ic = oc / P.mult;
    var acc = wt(P.bias_off + oc);
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
            let xv = buf[P.x_off + ((b * P.in_h + u32(iy)) * P.in_w + u32(ix)) * P.in_c + ic];
            acc += xv * wt(P.w_off + (ky * P.k_w + kx) * P.out_c + oc);
        }
    }
    buf[P.out_off + i] = finish(acc, oc);
}
