// One time step of a float LSTM with layer norm, in three dispatches ($STAGE), one thread per
// (batch row b, cell j); each gate is normalized over the cells of its row (TFLite's
// MeanStddevNormalization), times its coefficients, plus its bias:
//   stage_gates: the gates' sums and the input/forget peepholes (old c) into scratch s[b][gate][cell];
//   stage_cell:  i, f, g from the normalized sums; c = clip(f * c + i * g) in place; g into
//                scratch gs[b][cell]; the output peephole (new c) added to s[b][3][j];
//   stage_out:   o from the normalized output gate; h = o * act(c) at out[t] (or the projection's scratch).
// Each dispatch writes nothing another thread of it reads.
//#include "lstm_gates.wgsl"

fn normalized(b: u32, gate: u32, j: u32) -> f32 {
    let nc = P.n_cell;
    let base = P.s_off + (b * 4u + gate) * nc;
    var mean = 0.0;
    for (var k = 0u; k < nc; k++) {
        mean += buf[base + k];
    }
    mean = mean / f32(nc);
    var v = 0.0;
    for (var k = 0u; k < nc; k++) {
        let d = buf[base + k] - mean;
        v += d * d;
    }
    v = v / f32(nc);
    let x = (buf[base + j] - mean) * (1.0 / sqrt(v + 1e-8));
    return x * wt(P.ln_off + gate * nc + j) + wt(P.b_off + gate * nc + j);
}

fn stage_gates(b: u32, j: u32) {
    let nc = P.n_cell;
    var acc = gate_sums(b, j, vec4<f32>(0.0));
    if (P.peep != 0u) {
        let c_prev = buf[P.c_off + b * nc + j];
        acc.x += wt(P.p_off + j) * c_prev;
        acc.y += wt(P.p_off + nc + j) * c_prev;
    }
    let base = P.s_off + b * 4u * nc + j;
    buf[base] = acc.x;
    buf[base + nc] = acc.y;
    buf[base + 2u * nc] = acc.z;
    buf[base + 3u * nc] = acc.w;
}

fn stage_cell(b: u32, j: u32) {
    let nc = P.n_cell;
    let f = sigmoid_safe(normalized(b, 1u, j));
    var ig = 1.0 - f;
    if (P.cifg == 0u) {
        ig = sigmoid_safe(normalized(b, 0u, j));
    }
    let g = cell_act(normalized(b, 2u, j));
    let ci = P.c_off + b * nc + j;
    var c = buf[ci] * f;
    c += g * ig;
    if (P.cell_clip > 0.0) {
        c = clamp(c, -P.cell_clip, P.cell_clip);
    }
    buf[ci] = c;
    buf[P.g_off + b * nc + j] = g;
    if (P.peep != 0u) {
        buf[P.s_off + (b * 4u + 3u) * nc + j] += wt(P.p_off + 2u * nc + j) * c;
    }
}

fn stage_out(b: u32, j: u32) {
    let nc = P.n_cell;
    let c = buf[P.c_off + b * nc + j];
    let g = buf[P.g_off + b * nc + j];
    buf[P.out_off + b * P.out_bs + j] = sigmoid_safe(normalized(b, 3u, j)) * $HIDDEN;
}

fn run(i: u32) {
    $STAGE(i / P.n_cell, i % P.n_cell);
}
