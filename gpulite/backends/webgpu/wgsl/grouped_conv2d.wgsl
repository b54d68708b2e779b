// Grouped CONV_2D, NHWC: each thread computes four consecutive output channels of one group at
// one pixel (grouped_conv.py). Weights are laid out at allocate time as
// [G, KH, KW, Cg, OG4] (OG4: the group's outputs padded to a multiple of 4 with zeros), so one
// input value of the group meets four weights (one wt4 load); the bias as [G, OG4].
//#include "window.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.quads);  // p.c: which quad of which group
    let g = p.c / P.group_quads;
    let q = p.c % P.group_quads;
    var acc = wt4(P.bias_off / 4u + p.c);
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xb = P.x_off + in_index(p.b, cell.x, cell.y, P.in_c) + g * P.group_c;
            var wb = P.w_off / 4u + ((g * P.k_h + ky) * P.k_w + kx) * P.group_c * P.group_quads + q;
            for (var c = 0u; c < P.group_c; c++) {
                acc += buf[xb + c] * wt4(wb);
                wb += P.group_quads;
            }
        }
    }
    // the group's output channels from 4q on; the last quad of a group writes only those that exist
    let j = q * 4u;
    let ob = P.out_off + out_index(p, P.out_c) + g * P.group_out + j;
    let n = min(4u, P.group_out - j);
    buf[ob] = act(acc.x);
    if (n > 1u) { buf[ob + 1u] = act(acc.y); }
    if (n > 2u) { buf[ob + 2u] = act(acc.z); }
    if (n > 3u) { buf[ob + 3u] = act(acc.w); }
}
