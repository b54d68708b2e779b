// The sums of gemm.wgsl's P.splits partial products (kernels/gemm.py, when K is split across
// workgroups): thread i sums four columns of one row of C over the slices and stores them
// through mm_out (bias and epilogue) of the file before this one.

fn run(i: u32) {
    let cols4 = P.n_pad / 4u;
    let col = (i % cols4) * 4u;
    let rb = i / cols4;  // b * P.m + row
    if (col >= P.n_cols) {
        return;
    }
    var acc = vec4<f32>();
    let slice = P.batches * P.m * cols4;
    for (var s = 0u; s < P.splits; s++) {
        acc += buf4[P.part_off / 4u + s * slice + i];
    }
    mm_out(rb / P.m, rb % P.m, col, acc);
}
