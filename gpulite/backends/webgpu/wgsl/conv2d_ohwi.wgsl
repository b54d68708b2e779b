// CONV_2D with weights (and bias) computed at run time, NHWC: one output element per thread,
// reading TFLite's OHWI weights where they lie (no allocate-time re-layout is possible).
//#include "window.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.out_c);
    var acc = buf[P.bias_off + p.c * P.bias_step];
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xb = P.x_off + in_index(p.b, cell.x, cell.y, P.in_c);
            let wb = P.w_off + ((p.c * P.k_h + ky) * P.k_w + kx) * P.in_c;
            for (var c = 0u; c < P.in_c; c++) {
                acc += buf[xb + c] * buf[wb + c];
            }
        }
    }
    buf[P.out_off + i] = act(acc);
}
