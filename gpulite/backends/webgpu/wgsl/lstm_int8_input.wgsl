// The input part of every gate of an int8 LSTM for every step at once (kernels/recurrent_int8.py):
// pre[r, col] = clamp16(MultiplyByQuantizedMultiplier(W_x[col] . x[r] + b_x[col], m_g, s_g)),
// one thread per (row r of the input sequence, gate column col = gate * n_cell + cell), as the
// cpu kernel's IntegerLstm. Weights and biases are i32 words ([col][k], [col]); the gate's
// multiplier and shift are at q_off + 2 * gate.
//#include "qmath.wgsl"

fn run(i: u32) {
    let cols = 4u * P.n_cell;
    let r = i / cols;
    let col = i % cols;
    var acc = bitcast<i32>(buf[P.b_off + col]);
    let w = P.w_off + col * P.n_in;
    for (var k = 0u; k < P.n_in; k++) {
        acc += bitcast<i32>(buf[w + k]) * q_load_i8(P.x_off, r * P.n_in + k);
    }
    let g = col / P.n_cell;
    let m = bitcast<i32>(buf[P.q_off + 2u * g]);
    let s = bitcast<i32>(buf[P.q_off + 2u * g + 1u]);
    buf[P.pre_off + i] = bitcast<u32>(clamp(q_mbqm(acc, m, s), -32768, 32767));
}
