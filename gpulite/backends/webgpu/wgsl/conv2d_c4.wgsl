// CONV_2D for input channels a multiple of 4, NHWC: four output channels per thread, input
// read four channels at a time through buf4 (bias and activation fused).
// Weights are re-laid out at allocate time to [G, KH, KW, Cin/4, 4, 4] (G groups of 4 output
// channels, zero-padded): for input channels 4k..4k+3 a thread reads four consecutive vec4s,
// the columns of a 4x4 block, so each thread walks one contiguous stretch of weights. Weights
// and bias through wt4 (float16 in fp16 plans, widened to f32).

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
    var acc = wt4(P.bias_off / 4u + g);
    let iy0 = i32(oy * P.stride_h) - P.pad_top;
    let ix0 = i32(ox * P.stride_w) - P.pad_left;
    let tap = P.in_c4 * 4u;  // vec4s of weights per filter tap
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
            var xb = P.x_off / 4u + ((b * P.in_h + u32(iy)) * P.in_w + u32(ix)) * P.in_c4;
            var wb = P.w_off / 4u + ((g * P.k_h + ky) * P.k_w + kx) * tap;
            for (var c = 0u; c < P.in_c4; c++) {
                let v = buf4[xb];
                acc += v.x * wt4(wb) + v.y * wt4(wb + 1u) + v.z * wt4(wb + 2u) + v.w * wt4(wb + 3u);
                xb += 1u;
                wb += 4u;
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
