// CONV_2D, NHWC, four output channels per thread (bias and activation fused).
// Weights are re-laid out at allocate time to [KH, KW, Cin, Cout4] (Cout padded to a multiple
// of 4 with zeros) so one input value feeds four consecutive weights: one wt4 load (weights and
// bias are constants, float16 in fp16 plans; offsets a multiple of 4 values).

// finish(): the fused activation, or a fused PReLU with per-channel alpha (conv.py).
fn finish(v: f32, c: u32) -> f32 {
    $FINISH
}

fn run(i: u32) {
    let g = i % P.groups;
    var r = i / P.groups;
    let ox = r % P.out_w;
    r = r / P.out_w;
    let oy = r % P.out_h;
    let b = r / P.out_h;
    let oc = g * 4u;
    var acc = wt4((P.bias_off + oc) / 4u);
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
            var wb = P.w_off + (ky * P.k_w + kx) * P.in_c * P.out_c4 + oc;
            for (var c = 0u; c < P.in_c; c++) {
                acc += buf[xb + c] * wt4(wb / 4u);
                wb += P.out_c4;
            }
        }
    }
    let ob = P.out_off + ((b * P.out_h + oy) * P.out_w + ox) * P.out_c + oc;
    // Cout need not be a multiple of 4: the last group writes only the channels that exist.
    let n = min(4u, P.out_c - oc);
    buf[ob] = finish(acc.x, oc);
    if (n > 1u) { buf[ob + 1u] = finish(acc.y, oc + 1u); }
    if (n > 2u) { buf[ob + 2u] = finish(acc.z, oc + 2u); }
    if (n > 3u) { buf[ob + 3u] = finish(acc.w, oc + 3u); }
}
