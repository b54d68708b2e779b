// gemm.wgsl's B and output for CONV_2D with run-time weights: B[k][col] is OHWI weight
// [col][k] read in place at P.w_off (row stride P.k); bias read at run time, one value per
// output channel (P.bias_step 1) or none (0: one zero). C is row-major [P.m, P.n_cols] at
// P.out_off, written through conv_out.wgsl's store4.
//#include "conv_out.wgsl"

fn mm_b(b: u32, k: u32, col: u32) -> vec4<f32> {
    var v = vec4<f32>();
    if (k < P.k) {
        for (var j = 0u; j < 4u; j++) {
            if (col + j < P.n_cols) {
                v[j] = buf[P.w_off + (col + j) * P.k + k];
            }
        }
    }
    return v;
}

fn mm_out(b: u32, row: u32, col: u32, acc: vec4<f32>) {
    var bias = vec4<f32>();
    for (var j = 0u; j < 4u; j++) {
        bias[j] = buf[P.bias_off + min(col + j, P.n_cols - 1u) * P.bias_step];
    }
    store4(P.out_off + row * P.n_cols + col, col, P.n_cols, acc + bias);
}
