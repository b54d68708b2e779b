// FULLY_CONNECTED: out[row, n] = act(bias[n] + dot(x[row, :], w[n, :])), one output per thread.
// W (a template name) reads the weights: wt (constant weights, float16 in fp16 plans) or ld (run-time weights).

fn run(i: u32) {
    let col = i % P.n_out;
    let row = i / P.n_out;
    var acc = wt(P.bias_off + col);
    let xb = P.x_off + row * P.k;
    let wb = P.w_off + col * P.k;
    for (var k = 0u; k < P.k; k++) {
        acc += buf[xb + k] * $W(wb + k);
    }
    buf[P.out_off + i] = act(acc);
}
