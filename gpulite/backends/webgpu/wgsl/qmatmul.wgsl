// FULLY_CONNECTED and BATCH_MATMUL on integer codes (kernels/qmatmul.py): output element e is row
// r = e / P.out_c (of all batches), column j = e % P.out_c; dot(e, k0, k1) sums
// (A[r, k] - a_zp) * (B[k, j] - b_zp) over k0..k1. A's element (i, k) of batch b is at
// a_base(b) + i * P.a_m + k * P.a_k, B's (k, j) at b_base(b) + k * P.b_k + j * P.b_n; batches
// decompose along P.batch (4 dims) with P.sa / P.sb element strides (0 where broadcast).
//#include "qacc.wgsl"

fn dot(e: u32, k0: u32, k1: u32) -> vec2<u32> {
    let j = e % P.out_c;
    let r = e / P.out_c;
    let i = r % P.rows;
    var b = r / P.rows;
    var ab = 0u;
    var bb = 0u;
    for (var d = 3; d >= 0; d--) {
        let idx = b % P.batch[d];
        b = b / P.batch[d];
        ab += idx * P.sa[d];
        bb += idx * P.sb[d];
    }
    ab += i * P.a_m;
    bb += j * P.b_n;
    var acc = $ACC();
    for (var k = k0; k < k1; k++) {
        acc = acc_add(acc, ($LX(P.x_off, ab + k * P.a_k) - P.x_zp) * ($LW(P.w_off, bb + k * P.b_k) - P.w_zp));
    }
    return acc_wide(acc);
}
