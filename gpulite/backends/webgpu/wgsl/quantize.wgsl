// QUANTIZE: output code = clamp(round(x * (1 / scale)) + zero_point, qmin, qmax), rounded half
// to even in float32 as LiteRT's float -> int8/uint8/int16 kernel. `load` gives input element
// e's real value (a float32 word, or a narrow code dequantized); qwords.wgsl packs the codes,
// a thread a word.

fn load(e: u32) -> f32 {
    return $LOAD;
}

fn out_code(e: u32) -> i32 {
    return i32(clamp(round(load(e) * P.inv_scale) + f32(P.zp), f32(P.qmin), f32(P.qmax)));
}
