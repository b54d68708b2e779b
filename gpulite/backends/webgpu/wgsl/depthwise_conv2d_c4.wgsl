// DEPTHWISE_CONV_2D with multiplier 1, NHWC, four channels per thread through buf4 (bias and
// activation fused). Used when channels are a multiple of 4: one thread's index math and
// bounds checks then serve four outputs, and every load moves four values. Weights and bias
// through wt4 (float16 in fp16 plans).

// finish(): the fused activation, or a fused PReLU with per-channel alpha (conv.py).
fn finish(v: f32, c: u32) -> f32 {
    $FINISH
}

fn run(i: u32) {
    let c = (i % P.c4) * 4u;
    var r = i / P.c4;
    let ox = r % P.out_w;
    r = r / P.out_w;
    let oy = r % P.out_h;
    let b = r / P.out_h;
    var acc = wt4((P.bias_off + c) / 4u);
    let iy0 = i32(oy * P.stride_h) - P.pad_top;
    let ix0 = i32(ox * P.stride_w) - P.pad_left;
    let ch = P.c4 * 4u;
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
            let xb = P.x_off + ((b * P.in_h + u32(iy)) * P.in_w + u32(ix)) * ch + c;
            let wb = P.w_off + (ky * P.k_w + kx) * ch + c;
            acc += buf4[xb / 4u] * wt4(wb / 4u);
        }
    }
    let ob = (P.out_off + ((b * P.out_h + oy) * P.out_w + ox) * ch + c) / 4u;
    buf4[ob] = vec4<f32>(finish(acc.x, c), finish(acc.y, c + 1u), finish(acc.z, c + 2u), finish(acc.w, c + 3u));
}
