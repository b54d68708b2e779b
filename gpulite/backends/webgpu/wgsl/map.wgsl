// Elementwise map of up to three operands with broadcasting (kernels/mapping.py): output
// element e is $OP over v0, v1, v2, each read at its broadcast position. P.shape is the output
// shape collapsed to 4 dims, P.s0 / P.s1 / P.s2 the operands' element strides over those dims
// (0 along a broadcast dim). The arena is a u32 view; ld_* read element k of a tensor at word
// offset o as its WGSL type (bool and 8-bit elements are packed 4 to a word as in the host
// arena, 2-byte ones 2; an 8-byte element is read one word, `h`, at a time and moves bit for bit).
//#include "coords.wgsl"
//#include "math_fns.wgsl"

fn ld_f32(o: u32, k: u32, h: u32) -> f32 { return bitcast<f32>(buf[o + k]); }
fn ld_i32(o: u32, k: u32, h: u32) -> i32 { return bitcast<i32>(buf[o + k]); }
fn ld_u32(o: u32, k: u32, h: u32) -> u32 { return buf[o + k]; }
fn ld_u64(o: u32, k: u32, h: u32) -> u32 { return buf[o + 2u * k + h]; }
fn ld_u8(o: u32, k: u32, h: u32) -> u32 { return (buf[o + k / 4u] >> ((k % 4u) * 8u)) & 0xffu; }
fn ld_u16(o: u32, k: u32, h: u32) -> u32 { return (buf[o + k / 2u] >> ((k % 2u) * 16u)) & 0xffffu; }
fn ld_bool(o: u32, k: u32, h: u32) -> bool { return ld_u8(o, k, h) != 0u; }
// Narrow and wide integers as i32 values (CAST): sign- or zero-extended; int64 by its low word.
fn ld_i8(o: u32, k: u32, h: u32) -> i32 { return bitcast<i32>(ld_u8(o, k, h) << 24u) >> 24u; }
fn ld_u8n(o: u32, k: u32, h: u32) -> i32 { return i32(ld_u8(o, k, h)); }
fn ld_i16(o: u32, k: u32, h: u32) -> i32 { return bitcast<i32>(buf[o + k / 2u] << (16u - (k % 2u) * 16u)) >> 16u; }
fn ld_i64lo(o: u32, k: u32, h: u32) -> i32 { return bitcast<i32>(buf[o + 2u * k]); }

fn value(e: u32, h: u32) -> $OUT_T {
    let c = coords4(e, P.shape);
$LETS
    return $OP;
}

fn run(i: u32) {
$STORE
}
