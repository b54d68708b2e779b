// One time step of a float LSTM direction (LiteRT's LstmStepFloat without layer norm or
// projection), one thread per (batch row b, cell j): the four gates' sums bias + W_x x
// (+ W_aux aux) + W_h h_prev, the peepholes, c = clip(f * c + i * g) in place, and the output
// h = o * act(c) written at out[t]. h_prev is the previous step's output row (or, at the first
// step, the output state): every thread reads all of it, and none writes it in this dispatch.
// Weights are [k][gate][cell] (k over x, aux, h), biases and peepholes [gate][cell]; a CIFG
// cell has zeros for the input gate and takes i = 1 - f.
//#include "math_fns.wgsl"

fn sigmoid_safe(x: f32) -> f32 {
    let e = exp(-abs(x));
    return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

fn cell_act(v: f32) -> f32 { return $CELL_ACT; }

fn gates4(r: u32) -> vec4<f32> {
    let nc = P.n_cell;
    return vec4<f32>(wt(r), wt(r + nc), wt(r + 2u * nc), wt(r + 3u * nc));
}

fn run(i: u32) {
    let nc = P.n_cell;
    let b = i / nc;
    let j = i % nc;
    var acc = gates4(P.b_off + j);
    var r = P.w_off + j;
    let xb = P.x_off + b * P.x_bs;
    for (var k = 0u; k < P.n_in; k++) {
        acc += buf[xb + k] * gates4(r);
        r += 4u * nc;
    }
    let ab = P.aux_off + b * P.aux_bs;
    for (var k = 0u; k < P.n_aux; k++) {
        acc += buf[ab + k] * gates4(r);
        r += 4u * nc;
    }
    let hb = P.h_off + b * P.h_bs;
    for (var k = 0u; k < P.n_out; k++) {
        acc += buf[hb + k] * gates4(r);
        r += 4u * nc;
    }
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
