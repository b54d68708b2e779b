// CONCATENATION of 8-bit codes with requantization (qwords.wgsl), as the cpu's concat.py
// (TFLite's ConcatenationWithScaling): both tensors viewed as [outer, columns]; output column
// k belongs to the input whose columns [start, start + part) hold it. P.table lists per input
// (start, part, element offset in the arena, requantize?, scale, bias as f32 bits): a code is
// copied, or becomes round_half_away(q * scale + bias) clamped to [P.lo, P.hi], plus P.zp.
//#include "qfloat.wgsl"

fn out_code(e: u32) -> i32 {
    let o = e / P.row;
    let k = e % P.row;
    var j = 0u;
    while (j + 1u < P.n_in && k >= buf[P.table + (j + 1u) * 6u]) {
        j++;
    }
    let t = P.table + j * 6u;
    let q = $LOAD(0u, buf[t + 2u] + o * buf[t + 1u] + (k - buf[t]));
    if (buf[t + 3u] == 0u) {
        return q;
    }
    let f = mul_rounded(f32(q), bitcast<f32>(buf[t + 4u]), P.zero) + bitcast<f32>(buf[t + 5u]);
    return i32(clamp(round_away(f), f32(P.lo), f32(P.hi))) + P.zp;
}
