// An LSTM step's projection (LiteRT's LstmStepFloat): out[t, b, k] = clip(sum_j P[k, j] m[b, j]
// + bias[k]), where m holds o * act(c) of every cell of the step (lstm_step.wgsl wrote it), one
// thread per output value. No clip when P.clip is 0.

fn run(i: u32) {
    let b = i / P.n_out;
    let k = i % P.n_out;
    let mb = P.m_off + b * P.n_cell;
    let wb = P.w_off + k * P.n_cell;
    var acc = 0.0;
    for (var j = 0u; j < P.n_cell; j++) {
        acc += wt(wb + j) * buf[mb + j];
    }
    acc += wt(P.b_off + k);
    if (P.clip > 0.0) {
        acc = clamp(acc, -P.clip, P.clip);
    }
    buf[P.out_off + b * P.out_bs + k] = acc;
}
