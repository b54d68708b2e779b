// One time step of a float basic RNN direction (LiteRT's RnnBatchStep), one thread per (batch
// row b, unit j): h = act(bias + W_x x (+ W_aux aux) + W_h h_prev) written at out[t]. Weights
// are [k][unit] (k over x, aux, h). h_prev is the previous step's output row (the hidden state at
// the first step): every thread reads all of it, and none writes it in this dispatch.
//#include "math_fns.wgsl"

fn cell_act(v: f32) -> f32 { return $CELL_ACT; }

fn run(i: u32) {
    let nu = P.n_units;
    let b = i / nu;
    let j = i % nu;
    var acc = wt(P.b_off + j);
    var r = P.w_off + j;
    let xb = P.x_off + b * P.x_bs;
    for (var k = 0u; k < P.n_in; k++) {
        acc += buf[xb + k] * wt(r);
        r += nu;
    }
    let ab = P.aux_off + b * P.aux_bs;
    for (var k = 0u; k < P.n_aux; k++) {
        acc += buf[ab + k] * wt(r);
        r += nu;
    }
    let hb = P.h_off + b * P.h_bs;
    for (var k = 0u; k < nu; k++) {
        acc += buf[hb + k] * wt(r);
        r += nu;
    }
    buf[P.out_off + b * P.out_bs + j] = cell_act(acc);
}
