// The first pass of a long integer dot product (kernels/qgemm.py): thread j sums slice
// j % P.slices (P.slice_k products) of output element j / P.slices into a 64-bit partial at
// P.part_off + 2j; qgemm_sum.wgsl adds the slices.

fn run(j: u32) {
    let e = j / P.slices;
    let k0 = (j % P.slices) * P.slice_k;
    let a = dot(e, k0, min(k0 + P.slice_k, P.depth));
    buf[P.part_off + 2u * j] = a.x;
    buf[P.part_off + 2u * j + 1u] = a.y;
}
