// The projection of an int8 LSTM step (the cpu kernel's IntegerLstm.step with projection weights),
// one thread per (batch row b, output k): h = clamp8(rescale(W_p[k] . hidden[b] + b_p[k]) + h_zp),
// clipped to +-clip when clip > 0, into the sequence's i32 scratch. W_p is i32 [n_out][n_cell],
// b_p has the hidden zero point folded in; the multiplier and shift are at q_off + 24.
//#include "qmath.wgsl"

fn run(i: u32) {
    let b = i / P.n_out;
    let k = i % P.n_out;
    var acc = bitcast<i32>(buf[P.b_off + k]);
    let w = P.w_off + k * P.n_cell;
    for (var j = 0u; j < P.n_cell; j++) {
        acc += bitcast<i32>(buf[w + j]) * bitcast<i32>(buf[P.hid_off + b * P.n_cell + j]);
    }
    let m = bitcast<i32>(buf[P.q_off + 24u]);
    let s = bitcast<i32>(buf[P.q_off + 25u]);
    var h = clamp(q_mbqm(acc, m, s) + P.h_zp, -128, 127);
    if (P.clip > 0) {
        h = clamp(h, -P.clip, P.clip);
    }
    buf[P.h_out + b * P.h_bs + k] = bitcast<u32>(h);
}
