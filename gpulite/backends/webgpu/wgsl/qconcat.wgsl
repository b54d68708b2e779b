// CONCATENATION of 8-bit codes with requantization (qwords.wgsl), as the cpu's concat.py
// (TFLite's ConcatenationWithScaling): both tensors viewed as [outer, columns]; output column
// k belongs to the input whose columns [start, start + part) hold it. P.table lists per input
// (start, part, element offset in the arena, requantize?, scale, bias as f32 bits): a code is
// copied, or becomes round_half_away(q * scale + bias) clamped to [P.lo, P.hi], plus P.zp.
//#include "qfloat.wgsl"
//#include "concat_table.wgsl"

fn out_code(e: u32) -> i32 {
    let t = concat_entry(e % P.row, 6u);
    let q = $LOAD(0u, concat_source(e, t));
    if (buf[t + 3u] == 0u) {
        return q;
    }
    let f = mul_rounded(f32(q), bitcast<f32>(buf[t + 4u]), P.zero) + bitcast<f32>(buf[t + 5u]);
    return i32(clamp(round_away(f), f32(P.lo), f32(P.hi))) + P.zp;
}
