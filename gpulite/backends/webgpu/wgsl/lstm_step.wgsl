// One time step of a float LSTM direction without layer norm (LiteRT's LstmStepFloat), one
// thread per (batch row b, cell j): the gates (lstm_gates.wgsl), the peepholes, c = clip(f * c
// + i * g) in place, and h = o * act(c) written at out[t] (or, with a projection, into the
// scratch lstm_project.wgsl reads). Biases and peepholes are [gate][cell]; a CIFG cell has
// zeros for the input gate and takes i = 1 - f.
//#include "lstm_gates.wgsl"

fn run(i: u32) {
    let nc = P.n_cell;
    let b = i / nc;
    let j = i % nc;
    var acc = gate_sums(b, j, gates4(P.b_off + j));
    let ci = P.c_off + b * nc + j;
    let c_prev = buf[ci];
    if (P.peep != 0u) {
        acc.x += wt(P.p_off + j) * c_prev;
        acc.y += wt(P.p_off + nc + j) * c_prev;
    }
    let f = sigmoid_safe(acc.y);
    let ig = select(sigmoid_safe(acc.x), 1.0 - f, P.cifg != 0u);
    let g = cell_act(acc.z);
    var c = c_prev * f;
    c += g * ig;
    if (P.cell_clip > 0.0) {
        c = clamp(c, -P.cell_clip, P.cell_clip);
    }
    buf[ci] = c;
    if (P.peep != 0u) {
        acc.w += wt(P.p_off + 2u * nc + j) * c;
    }
    buf[P.out_off + b * P.out_bs + j] = sigmoid_safe(acc.w) * $HIDDEN;
}
