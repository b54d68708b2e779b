// int8 / uint8 SOFTMAX, second pass (qwords.wgsl): code of element e from its row's max and
// 1 / (sum * output_scale) (qsoftmax_rows.wgsl): p = table value * that, in f32; int8 rounds
// p half away from zero and adds the zero point, uint8 truncates p + 0.5 (LiteRT's non-ARM
// path, which ignores the zero point); both clamped to the dtype.
//#include "qfloat.wgsl"

fn out_code(e: u32) -> i32 {
    let row = e / P.depth;
    let mx = bitcast<i32>(buf[P.stats_off + 2u * row]);
    let inv = bitcast<f32>(buf[P.stats_off + 2u * row + 1u]);
    let t = bitcast<f32>(buf[P.table_off + u32($LOAD(P.x_off, e) - mx + 255)]);
    let p = mul_rounded(t, inv, P.zero);
    return clamp($ROUND, P.qmin, P.qmax);
}
