// The int8 LSTM's per-cell helpers (kernels/recurrent_int8.py), for lstm_int8_step.wgsl and
// lstm_int8_norm.wgsl: the gemmlowp tables (t_off: sigmoid Q3.12, tanh Q3.12, tanh of the
// cell's Q format; int16 packed), rescales by the multiplier table (q_off), a gate's linear
// part clamp16(rescale(W_h[gate, j] . h + b_h) + pre) and its peephole term.
//#include "qmath.wgsl"

fn table(k: u32, v: i32) -> i32 {
    return q_load_i16(P.t_off, k * 65536u + u32(v + 32768));
}

fn rescale(v: i32, q: u32) -> i32 {
    return q_mbqm(v, bitcast<i32>(buf[P.q_off + q]), bitcast<i32>(buf[P.q_off + q + 1u]));
}

fn c16(v: i32) -> i32 {
    return clamp(v, -32768, 32767);
}

fn w16(v: i32) -> i32 {
    return (v << 16u) >> 16u;
}

// The gate's linear part, as the cpu kernel: clamp16(recurrent product + input part).
fn gate(g: u32, b: u32, j: u32) -> i32 {
    let col = g * P.n_cell + j;
    var acc = bitcast<i32>(buf[P.bh_off + col]);
    let w = P.wh_off + col * P.n_out;
    for (var k = 0u; k < P.n_out; k++) {
        var h: i32;
        if (P.first != 0u) {
            h = q_load_i8(P.h_state, b * P.n_out + k);
        } else {
            h = bitcast<i32>(buf[P.h_prev + b * P.h_bs + k]);
        }
        acc += bitcast<i32>(buf[w + k]) * h;
    }
    return c16(rescale(acc, 2u * g + 8u) + bitcast<i32>(buf[P.pre_row + b * P.pre_bs + col]));
}

fn peephole(v: i32, p: u32, j: u32, c: i32) -> i32 {
    if (P.peep == 0u) {
        return v;
    }
    return c16(v + rescale(bitcast<i32>(buf[P.p_off + p * P.n_cell + j]) * c, 18u + 2u * p));
}
