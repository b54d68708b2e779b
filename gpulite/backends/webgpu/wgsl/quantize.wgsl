// QUANTIZE: output code = clamp(round(x * (1 / scale)) + zero_point, qmin, qmax), rounded half
// to even in float32 as LiteRT's float -> int8/uint8/int16 kernel. `load` gives input element
// e's real value (a float32 word, or a narrow code dequantized). $PER (4 or 2) output codes per
// u32 word: one thread builds a whole word, so no two threads write one word.

fn load(e: u32) -> f32 {
    return $LOAD;
}

fn code(e: u32) -> i32 {
    return i32(clamp(round(load(e) * P.inv_scale) + f32(P.zp), f32(P.qmin), f32(P.qmax)));
}

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < ${PER}u; k++) {
        let e = i * ${PER}u + k;
        if (e >= P.elems) {
            break;
        }
        let c = code(e);
        w |= (bitcast<u32>(c) & $MASK) << (k * (32u / ${PER}u));
    }
    buf[P.out_off + i] = w;
}
