// One time step of an int8 LSTM with layer norm (LiteRT's LstmStepInteger8x8_16 with its integer
// ApplyLayerNorm; the cpu kernel's IntegerLstm), in $STAGE dispatches, as each gate is normalized
// over every cell of its row:
//   stage_gates (a thread per row b and cell j): each gate's linear part, plus the peephole of
//     the old cell for i and f, into g_off [b][gate][j] (i32 scratch);
//   stage_stats (a thread per row and gate g0 + k, k < ng): the row's mean (x 1024) and the
//     inverse square root of its variance as a multiplier and shift, into st_off [b][gate][3];
//   stage_cell: i, f and the cell gate normalized (ln) and activated, the cell updated, and the
//     output gate's pre-activation plus the peephole of the new cell, back into g_off;
//   stage_stats again for the output gate, then stage_out: o normalized, activated, and h.
// The layer norm weights and biases are i32 [gate][cell] at ln_off and lb_off; each gate's
// multiplier and shift at q_off + 26 + 2 * gate, its variance guard at q_off + 34 + 2 * gate.
//#include "lstm_int8_gates.wgsl"

fn old_cell(b: u32, j: u32) -> i32 {
    if (P.first != 0u) {
        return q_load_i16(P.c_state, b * P.n_cell + j);
    }
    return bitcast<i32>(buf[P.c_off + b * P.n_cell + j]);
}

fn gi(b: u32, g: u32, j: u32) -> u32 {
    return P.g_off + (b * 4u + g) * P.n_cell + j;
}

fn neg64(a: vec2<u32>) -> vec2<u32> {
    return q_add64(vec2<u32>(~a.x, ~a.y), vec2<u32>(1u, 0u));
}

// a / d truncated toward zero (C's int64 division by a positive int32), a's magnitude below 2^63.
fn div64(a: vec2<u32>, d: u32) -> i32 {
    let negative = bitcast<i32>(a.y) < 0;
    var m = a;
    if (negative) {
        m = neg64(a);
    }
    var q = vec2<u32>(0u, 0u);
    var r = 0u;
    for (var k = 63i; k >= 0; k--) {
        let bit = select((m.x >> u32(k)) & 1u, (m.y >> u32(max(k - 32, 0))) & 1u, k >= 32);
        r = (r << 1u) | bit;
        if (r >= d) {
            r -= d;
            if (k >= 32) {
                q.y |= 1u << u32(k - 32);
            } else {
                q.x |= 1u << u32(k);
            }
        }
    }
    if (negative) {
        q = neg64(q);
    }
    return bitcast<i32>(q.x);
}

// The gate's value x normalized: ApplyLayerNorm's per-element step with the row's statistics.
fn ln(b: u32, g: u32, j: u32, x: i32) -> i32 {
    let s = P.st_off + (b * 4u + g) * 3u;
    let rescaled = q_mbqm(1024 * x - bitcast<i32>(buf[s]), bitcast<i32>(buf[s + 1u]), bitcast<i32>(buf[s + 2u]));
    let val3 = rescaled * bitcast<i32>(buf[P.ln_off + g * P.n_cell + j]) + bitcast<i32>(buf[P.lb_off + g * P.n_cell + j]);
    let d = select(val3 - 512, val3 + 512, val3 > 0) / 1024;
    let q = P.q_off + 26u + 2u * g;
    return c16(q_mbqm(d, bitcast<i32>(buf[q]), bitcast<i32>(buf[q + 1u]) + 12));
}

fn stage_gates(i: u32) {
    let b = i / P.n_cell;
    let j = i % P.n_cell;
    let c = old_cell(b, j);
    for (var g = select(0u, 1u, P.cifg != 0u); g < 4u; g++) {
        var v = gate(g, b, j);
        if (g < 2u) {
            v = peephole(v, g, j, c);
        }
        buf[gi(b, g, j)] = bitcast<u32>(v);
    }
}

fn stage_stats(i: u32) {
    let b = i / P.ng;
    let g = P.g0 + i % P.ng;
    var sum = 0i;
    var sq = vec2<u32>(0u, 0u);
    for (var j = 0u; j < P.n_cell; j++) {
        let x = bitcast<i32>(buf[gi(b, g, j)]);
        sum += x;
        sq = q_add64(sq, q_mul_wide(x, x));
    }
    let mean = div64(q_mul_wide(sum, 1024), P.n_cell);
    let v = q_add64(q_mul64(sq, i32((1u << 20u) / P.n_cell)), neg64(q_mul_wide(mean, mean)));
    var variance = div64(v, 1u << 20u);
    if (variance < 1) {
        variance = bitcast<i32>(buf[P.q_off + 34u + 2u * g]);
    }
    let r = q_inv_sqrt(variance);
    let s = P.st_off + (b * 4u + g) * 3u;
    buf[s] = bitcast<u32>(mean);
    buf[s + 1u] = bitcast<u32>(r.x);
    buf[s + 2u] = bitcast<u32>(r.y);
}

fn stage_cell(i: u32) {
    let b = i / P.n_cell;
    let j = i % P.n_cell;
    var c = old_cell(b, j);
    let f = table(0u, ln(b, 1u, j, bitcast<i32>(buf[gi(b, 1u, j)])));
    let g = table(1u, ln(b, 2u, j, bitcast<i32>(buf[gi(b, 2u, j)])));
    var ig: i32;
    if (P.cifg != 0u) {
        ig = 32767 - f;
    } else {
        ig = table(0u, ln(b, 0u, j, bitcast<i32>(buf[gi(b, 0u, j)])));
    }
    c = c16(w16(q_rdbpot(f * c, 15)) + w16(q_rdbpot(ig * g, P.cell_shift)));
    if (P.cell_clip > 0) {
        c = clamp(c, -P.cell_clip, P.cell_clip);
    }
    buf[P.c_off + b * P.n_cell + j] = bitcast<u32>(c);
    buf[gi(b, 3u, j)] = bitcast<u32>(peephole(bitcast<i32>(buf[gi(b, 3u, j)]), 2u, j, c));
}

fn stage_out(i: u32) {
    let b = i / P.n_cell;
    let j = i % P.n_cell;
    let c = bitcast<i32>(buf[P.c_off + b * P.n_cell + j]);
    let o = table(0u, ln(b, 3u, j, bitcast<i32>(buf[gi(b, 3u, j)])));
    let raw = rescale(o * table(2u, c), 16u);
    if (P.proj != 0u) {
        buf[P.hid_off + b * P.n_cell + j] = bitcast<u32>(clamp(raw - P.hidden_zp, -128, 127));
    } else {
        buf[P.h_out + b * P.h_bs + j] = bitcast<u32>(clamp(raw + P.hidden_zp, -128, 127));
    }
}

fn run(i: u32) {
    $STAGE(i);
}
