// int16 SOFTMAX (16x8 mode) as TFLite's SoftmaxInt16 (the cpu's quantized_int16.py): x - max
// rescaled (q_mbqm by P.m, P.shift) so [-65535, 0] spans [-10, 0], plus 32767, looked up in the
// 513-entry exp table (9-bit index, 7-bit interpolation); the row's sum (an i32: integers, any
// order) normalised by its leading zeros indexes the 1 / (1 + x) table. qsoftmax16_rows.wgsl
// stores each row's max, reciprocal and shift at P.stats_off + 3 * row; out_code (qwords.wgsl)
// then gives (e * reciprocal) >> shift, rounded, in [0, 32767].
//#include "qmath.wgsl"

fn lut(off: u32, x: i32) -> i32 {
    let idx = u32(256 + (x >> 7u));
    let base = bitcast<i32>(buf[off + idx]);
    return base + (((bitcast<i32>(buf[off + idx + 1u]) - base) * (x & 0x7f) + 64) >> 7u);
}

fn exp_of(v: i32, mx: i32) -> i32 {
    return lut(P.exp_off, clamp(q_mbqm(v - mx, P.m, P.shift) + 32767, -32768, 32767));
}

fn out_code(e: u32) -> i32 {
    let s = P.stats_off + 3u * (e / P.depth);
    let x = exp_of(q_load_i16(P.x_off, e), bitcast<i32>(buf[s]));
    let right = buf[s + 2u];
    return clamp((x * bitcast<i32>(buf[s + 1u]) + (1 << (right - 1u))) >> right, 0, 32767);
}
