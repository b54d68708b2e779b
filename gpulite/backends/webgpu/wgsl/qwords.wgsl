// Driver of the integer kernels that write narrow codes (int8/uint8: $PER = 4 codes per u32
// word, int16: 2): one thread builds whole output word i from out_code(e) of its elements, so
// no two threads write one word (a channel count that is no multiple of $PER is fine: a word
// may hold the end of one pixel and the start of the next). The kernel file defines
// `fn out_code(e: u32) -> i32` (the code of output element e, already in range) and reads its
// inputs' codes with qmath.wgsl's q_load_*; $PUT is q_byte or q_half.
//#include "qmath.wgsl"

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < ${PER}u; k++) {
        let e = i * ${PER}u + k;
        if (e >= P.elems) {
            break;
        }
        w |= $PUT(out_code(e), k);
    }
    buf[P.out_off + i] = w;
}
