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
//#include "lstm_int8_gates.wgsl"

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
