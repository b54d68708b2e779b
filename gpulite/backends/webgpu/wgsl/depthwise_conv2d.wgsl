// DEPTHWISE_CONV_2D, NHWC, one output element per thread (bias and activation fused).
// Weights keep TFLite's [1, KH, KW, Cout] layout; output channel oc reads input channel
// oc / multiplier. Channels vary fastest across threads, so neighbours read neighbours.
// Weights and bias through wt (float16 in fp16 plans).
//#include "window.wgsl"
//#include "conv_out.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.out_c);
    let ic = p.c / P.mult;
    var acc = wt(P.bias_off + p.c);
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xv = buf[P.x_off + in_index(p.b, cell.x, cell.y, P.in_c) + ic];
            acc += xv * wt(P.w_off + (ky * P.k_w + kx) * P.out_c + p.c);
        }
    }
    buf[P.out_off + i] = finish(acc, P.out_off + i, p.c);
}
