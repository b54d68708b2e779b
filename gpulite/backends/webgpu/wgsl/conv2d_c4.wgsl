// CONV_2D for input channels a multiple of 4, NHWC: four output channels per thread, input
// read four channels at a time through buf4 (bias and activation fused).
// Weights are re-laid out at allocate time to [G, KH, KW, Cin/4, 4, 4] (G groups of 4 output
// channels, zero-padded): for input channels 4k..4k+3 a thread reads four consecutive vec4s,
// the columns of a 4x4 block, so each thread walks one contiguous stretch of weights. Weights
// and bias through wt4 (float16 in fp16 plans, widened to f32).
//#include "window.wgsl"
//#include "conv_out.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.groups);
    let oc = p.c * 4u;
    var acc = wt4(P.bias_off / 4u + p.c);
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    let tap = P.in_c4 * 4u;  // vec4s of weights per filter tap
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            var xb = P.x_off / 4u + in_index(p.b, cell.x, cell.y, P.in_c4);
            var wb = P.w_off / 4u + ((p.c * P.k_h + ky) * P.k_w + kx) * tap;
            for (var c = 0u; c < P.in_c4; c++) {
                let v = buf4[xb];
                acc += v.x * wt4(wb) + v.y * wt4(wb + 1u) + v.z * wt4(wb + 2u) + v.w * wt4(wb + 3u);
                xb += 1u;
                wb += 4u;
            }
        }
    }
    store4(P.out_off + out_index(p, P.out_c) + oc, oc, P.out_c, acc);
}
