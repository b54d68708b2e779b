// CONV_2D, NHWC, four output channels per thread (bias and activation fused).
// Weights are re-laid out at allocate time to [KH, KW, Cin, Cout4] (Cout padded to a multiple
// of 4 with zeros) so one input value feeds four consecutive weights: one wt4 load (weights and
// bias are constants, float16 in fp16 plans; offsets a multiple of 4 values).
//#include "window.wgsl"
//#include "conv_out.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.groups);
    let oc = p.c * 4u;
    var acc = wt4((P.bias_off + oc) / 4u);
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xb = P.x_off + in_index(p.b, cell.x, cell.y, P.in_c);
            var wb = P.w_off + (ky * P.k_w + kx) * P.in_c * P.out_c4 + oc;
            for (var c = 0u; c < P.in_c; c++) {
                acc += buf[xb + c] * wt4(wb / 4u);
                wb += P.out_c4;
            }
        }
    }
    store4(P.out_off + out_index(p, P.out_c) + oc, oc, P.out_c, acc);
}
