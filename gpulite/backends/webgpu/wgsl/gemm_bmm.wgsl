// gemm.wgsl's A, B and output for BATCH_MATMUL: batch b of the output's (merged, up to 4) batch
// dims P.batch reads A and B at word strides P.sa / P.sb (0 where broadcast); within a matrix,
// A[row][k] is at row * P.a_m + k * P.a_k and B[k][col] at k * P.b_k + col * P.b_n (adj_x /
// adj_y swap them). C is row-major [batch][P.m][P.n_cols] at P.out_off, plus a bias of one
// value per column (P.bias_step 1: FULLY_CONNECTED with run-time weights) or one for all (0),
// read with $BIAS (wt: a weight, float16 in fp16 plans; ld: float32).
// $A_VEC / $B_VEC: four consecutive k of a row of A / four consecutive columns of B are one
// aligned vec4 (a_k / b_n 1, k / n_cols and the offsets multiples of 4): read through buf4.
//#include "coords.wgsl"
const A_VEC: bool = $A_VEC;
const B_VEC: bool = $B_VEC;

fn mm_a(b: u32, row: u32, k: u32) -> vec4<f32> {
    var v = vec4<f32>();
    if (row < P.m) {
        let at = P.a_off + dot(coords4(b, P.batch), P.sa) + row * P.a_m + k * P.a_k;
        if (A_VEC) {
            if (k < P.k) {
                v = buf4[at / 4u];
            }
            return v;
        }
        for (var j = 0u; j < 4u; j++) {
            if (k + j < P.k) {
                v[j] = buf[at + j * P.a_k];
            }
        }
    }
    return v;
}

fn mm_b(b: u32, k: u32, col: u32) -> vec4<f32> {
    var v = vec4<f32>();
    if (k < P.k) {
        let at = P.b_off + dot(coords4(b, P.batch), P.sb) + k * P.b_k + col * P.b_n;
        if (B_VEC) {
            if (col < P.n_cols) {
                v = buf4[at / 4u];
            }
            return v;
        }
        for (var j = 0u; j < 4u; j++) {
            if (col + j < P.n_cols) {
                v[j] = buf[at + j * P.b_n];
            }
        }
    }
    return v;
}

fn mm_out(b: u32, row: u32, col: u32, acc: vec4<f32>) {
    let at = P.out_off + (b * P.m + row) * P.n_cols + col;
    for (var j = 0u; j < 4u; j++) {
        if (col + j < P.n_cols) {
            buf[at + j] = act(acc[j] + $BIAS(P.bias_off + (col + j) * P.bias_step));
        }
    }
}
