// Narrow integer codes in the arena (`//#include "qcodes.wgsl"`, any word type): element e of
// a tensor whose first word is w0, sign-extended (int8, int16) or zero-extended (uint8) to i32.

fn code_s8(w0: u32, e: u32) -> i32 {
    return (bitcast<i32>(buf[w0 + e / 4u]) << (24u - (e % 4u) * 8u)) >> 24u;
}

fn code_u8(w0: u32, e: u32) -> i32 {
    return (bitcast<i32>(buf[w0 + e / 4u]) >> ((e % 4u) * 8u)) & 0xff;
}

fn code_s16(w0: u32, e: u32) -> i32 {
    return (bitcast<i32>(buf[w0 + e / 2u]) << (16u - (e % 2u) * 16u)) >> 16u;
}
