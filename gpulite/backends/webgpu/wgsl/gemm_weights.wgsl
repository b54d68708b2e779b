// gemm.wgsl's B and output for the kernels with constant weights (CONV_2D, FULLY_CONNECTED):
// B packed at allocate time as [P.k, P.n4] (columns zero-padded to whole vec4s; kernels/gemm.py)
// at P.w_off, bias (P.n4 values) at P.bias_off, both through wt4 (float16 in fp16 plans). C is
// row-major [P.m, P.n_cols] at P.out_off, written through conv_out.wgsl's store4 (fused
// activation, PReLU).
//#include "conv_out.wgsl"

fn mm_b(b: u32, k: u32, col: u32) -> vec4<f32> {
    if (k >= P.k || col >= P.n4) {
        return vec4<f32>();
    }
    return wt4((P.w_off + k * P.n4 + col) / 4u);
}

fn mm_out(b: u32, row: u32, col: u32, acc: vec4<f32>) {
    store4(P.out_off + row * P.n_cols + col, col, P.n_cols, acc + wt4((P.bias_off + col) / 4u));
}
