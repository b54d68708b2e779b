// DEPTHWISE_CONV_2D with multiplier 1, NHWC, four channels per thread through buf4 (bias and
// activation fused). Used when channels are a multiple of 4: one thread's index math and
// bounds checks then serve four outputs, and every load moves four values. Weights and bias
// through wt4 (float16 in fp16 plans).
//#include "window.wgsl"
//#include "conv_out.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.c4);
    let c = p.c * 4u;
    var acc = wt4((P.bias_off + c) / 4u);
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    let ch = P.c4 * 4u;
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xb = P.x_off + in_index(p.b, cell.x, cell.y, ch) + c;
            let wb = P.w_off + (ky * P.k_w + kx) * ch + c;
            acc += buf4[xb / 4u] * wt4(wb / 4u);
        }
    }
    let ob = (P.out_off + out_index(p, ch) + c) / 4u;
    buf4[ob] = vec4<f32>(finish(acc.x, c), finish(acc.y, c + 1u), finish(acc.z, c + 2u), finish(acc.w, c + 3u));
}
