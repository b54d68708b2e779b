// Shared by the LSTM step kernels: the four gates' sums of one (batch row b, cell j), with the
// gate functions. Weights are [k][gate][cell] (k over x, aux, h), so neighbouring threads read
// neighbouring words. h_prev is the previous step's output row (the output state at the first
// step): every thread reads all of it, and no dispatch of the step writes it.
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

// init + W_x x (+ W_aux aux) + W_h h_prev for the four gates (input, forget, cell, output).
fn gate_sums(b: u32, j: u32, init: vec4<f32>) -> vec4<f32> {
    let nc = P.n_cell;
    var acc = init;
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
    return acc;
}
