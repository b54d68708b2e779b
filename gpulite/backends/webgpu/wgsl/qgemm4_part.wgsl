// The first pass of a long 8-bit dot product on the word path (kernels/qgemm.py): thread j sums
// slice j % P.slices (P.slice_k products, a multiple of 4) of output word j / P.slices into the
// 64-bit partials of its four elements, laid out as qgemm_part.wgsl's (qgemm_sum.wgsl adds them).

fn run(j: u32) {
    let e0 = 4u * (j / P.slices);
    let s = j % P.slices;
    let k0 = s * P.slice_k;
    let a = dot4(e0, k0, min(k0 + P.slice_k, P.depth));
    for (var c = 0u; c < 4u; c++) {
        let at = P.part_off + 2u * ((e0 + c) * P.slices + s);
        let v = q_i64(a[c]);
        buf[at] = v.x;
        buf[at + 1u] = v.y;
    }
}
