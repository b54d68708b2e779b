// BATCH_MATMUL: out[batch, m, n] = sum_k a[batch, m, k] * b[batch, k, n], one output per thread.
// Batch dims broadcast through P.sa / P.sb (word strides over the output's batch dims, 0 where
// broadcast); adj_x / adj_y only change the row/column strides (P.a_m, P.a_k, P.b_k, P.b_n).
//#include "coords.wgsl"

fn run(i: u32) {
    let n = i % P.cols;
    let r = i / P.cols;
    let m = r % P.rows;
    let c = coords4(r / P.rows, P.batch);
    var pa = P.a_off + dot(c, P.sa) + m * P.a_m;
    var pb = P.b_off + dot(c, P.sb) + n * P.b_n;
    var acc = 0.0;
    for (var k = 0u; k < P.k; k++) {
        acc += buf[pa] * buf[pb];
        pa += P.a_k;
        pb += P.b_k;
    }
    buf[P.out_off + i] = acc;
}
