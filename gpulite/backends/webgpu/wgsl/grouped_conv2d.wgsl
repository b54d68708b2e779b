// Grouped CONV_2D, NHWC: each thread computes four consecutive output channels of one group at
// one pixel, over one slice of the group's input channels (grouped_conv.py). Weights are laid
// out at allocate time as [G, KH, KW, Cg, OG4] (OG4: the group's outputs padded to a multiple
// of 4 with zeros), so one input value of the group meets four weights (one wt4 load); the
// bias as [G, OG4]. With one slice (P.slices == 1) the thread adds the bias and writes the
// output; with more, its partial sum goes to slice s of the scratch at P.part_off (vec4s) and
// grouped_conv2d_sum.wgsl adds the slices.
//#include "window.wgsl"
//#include "grouped_out.wgsl"

fn run(i: u32) {
    let s = i % P.slices;
    let pq = i / P.slices;  // which quad of which group at which pixel
    let p = out_pixel(pq, P.quads);
    let g = p.c / P.group_quads;
    let q = p.c % P.group_quads;
    let c0 = s * P.slice_c;
    let c1 = min(P.group_c, c0 + P.slice_c);
    var acc = vec4<f32>(0.0);
    if (P.slices == 1u) {
        acc = wt4(P.bias_off / 4u + p.c);
    }
    let win = window(p, vec2<u32>(P.dil_h, P.dil_w));
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let xb = P.x_off + in_index(p.b, cell.x, cell.y, P.in_c) + g * P.group_c;
            var wb = P.w_off / 4u + (((g * P.k_h + ky) * P.k_w + kx) * P.group_c + c0) * P.group_quads + q;
            for (var c = c0; c < c1; c++) {
                acc += buf[xb + c] * wt4(wb);
                wb += P.group_quads;
            }
        }
    }
    if (P.slices == 1u) {
        store_quad(p, g, q, acc);
    } else {
        buf4[P.part_off / 4u + s * P.count + pq] = acc;
    }
}
