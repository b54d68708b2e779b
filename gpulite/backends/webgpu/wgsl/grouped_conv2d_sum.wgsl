// The second pass of a grouped CONV_2D split over slices of the group's channels
// (grouped_conv2d.wgsl): the bias plus the P.slices partial sums of one quad, then the output.
//#include "grouped_out.wgsl"

fn run(pq: u32) {
    let p = out_pixel(pq, P.quads);
    var acc = wt4(P.bias_off / 4u + p.c);
    for (var s = 0u; s < P.slices; s++) {
        acc += buf4[P.part_off / 4u + s * P.count + pq];
    }
    store_quad(p, p.c / P.group_quads, p.c % P.group_quads, acc);
}
