// One time step of an int8 LSTM (LiteRT's LstmStepInteger8x8_16; the cpu kernel's IntegerLstm.step),
// one thread per (batch row b, cell j), without layer norm. Each gate:
// clamp16(rescale(W_h[gate, j] . h + b_h) + pre), plus the peephole term (gates i, f: the old
// cell; o: the new), then gemmlowp's int16 sigmoid / tanh as 65,536-entry tables of codes
// (t_off: sigmoid Q3.12, then tanh Q3.12, then tanh of the cell's Q format, int16 packed).
// c = clamp16(rdbpot(f * c, 15) + rdbpot(i * g, 30 + cell_scale)) (each wrapped to int16);
// h = clamp8(rescale(o * tanh(c)) + hidden_zp); with a projection (P.proj) the step writes
// clamp8(rescale(o * tanh(c)) - hidden_zp) to scratch instead and lstm_int8_project.wgsl makes h
// (n_out wide). The int8 h and int16 c of the sequence live in i32 scratch (hseq in the output's
// row layout, c per (b, j)); the first step reads the state tensors instead. pack_codes.wgsl
// writes the packed output and states after the last step.
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

fn run(i: u32) {
    let b = i / P.n_cell;
    let j = i % P.n_cell;
    let ci = P.c_off + b * P.n_cell + j;
    var c: i32;
    if (P.first != 0u) {
        c = q_load_i16(P.c_state, b * P.n_cell + j);
    } else {
        c = bitcast<i32>(buf[ci]);
    }
    let f = table(0u, peephole(gate(1u, b, j), 1u, j, c));
    let g = table(1u, gate(2u, b, j));
    var ig: i32;
    if (P.cifg != 0u) {
        ig = 32767 - f;
    } else {
        ig = table(0u, peephole(gate(0u, b, j), 0u, j, c));
    }
    c = c16(w16(q_rdbpot(f * c, 15)) + w16(q_rdbpot(ig * g, P.cell_shift)));
    if (P.cell_clip > 0) {
        c = clamp(c, -P.cell_clip, P.cell_clip);
    }
    buf[ci] = bitcast<u32>(c);
    let o = table(0u, peephole(gate(3u, b, j), 2u, j, c));
    let raw = rescale(o * table(2u, c), 16u);
    if (P.proj != 0u) {
        buf[P.hid_off + b * P.n_cell + j] = bitcast<u32>(clamp(raw - P.hidden_zp, -128, 127));
    } else {
        buf[P.h_out + b * P.h_bs + j] = bitcast<u32>(clamp(raw + P.hidden_zp, -128, 127));
    }
}
