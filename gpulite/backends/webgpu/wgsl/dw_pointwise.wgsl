// DEPTHWISE_CONV_2D (multiplier 1, $C4 groups of 4 channels) and the 1x1 CONV_2D after it
// (kernels/pointwise.py): one thread per output pixel keeps the pixel's depthwise result in
// registers and computes every output channel of the 1x1 from it. The depthwise's own
// activation is dw_act; the 1x1's is act, applied by finish with the epilogue. 1x1 weights as
// [groups of 4 outputs][C/4][4 inputs][4 outputs] (kernels/pointwise.py).
//#include "window.wgsl"
//#include "conv_out.wgsl"

fn dw_act(v: f32) -> f32 {
    $DW_ACT
}

fn run(i: u32) {
    let p = out_pixel(i, 1u);
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    var d: array<vec4<f32>, $C4>;
    for (var s = 0u; s < ${C4}u; s++) {
        d[s] = wt4(P.dw_b_off / 4u + s);
    }
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xb = (P.x_off + in_index(p.b, cell.x, cell.y, ${C4}u * 4u)) / 4u;
            let wb = P.dw_w_off / 4u + (ky * P.k_w + kx) * ${C4}u;
            for (var s = 0u; s < ${C4}u; s++) {
                d[s] += buf4[xb + s] * wt4(wb + s);
            }
        }
    }
    for (var s = 0u; s < ${C4}u; s++) {
        d[s] = vec4<f32>(dw_act(d[s].x), dw_act(d[s].y), dw_act(d[s].z), dw_act(d[s].w));
    }
    let ob = P.out_off + i * P.out_c;
    for (var g = 0u; g < P.groups; g++) {
        var acc = wt4(P.pw_b_off / 4u + g);
        var wb = P.pw_w_off / 4u + g * ${C4}u * 4u;
        for (var s = 0u; s < ${C4}u; s++) {
            let v = d[s];
            acc += v.x * wt4(wb) + v.y * wt4(wb + 1u) + v.z * wt4(wb + 2u) + v.w * wt4(wb + 3u);
            wb += 4u;
        }
        store4(ob + g * 4u, g * 4u, P.out_c, acc);
    }
}
