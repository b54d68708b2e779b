// int16 SOFTMAX, first pass (qsoftmax16.wgsl): one thread per row of P.depth codes stores the
// row's largest code, the reciprocal of its sum of exp_of values from the 1 / (1 + x) table,
// and the shift that goes with it.
//#include "qsoftmax16.wgsl"

fn run(row: u32) {
    let base = row * P.depth;
    var mx = -32768;
    for (var k = 0u; k < P.depth; k++) {
        mx = max(mx, q_load_i16(P.x_off, base + k));
    }
    var total = 0;
    for (var k = 0u; k < P.depth; k++) {
        total += exp_of(q_load_i16(P.x_off, base + k), mx);
    }
    let headroom = countLeadingZeros(u32(total));
    let shifted = i32(((u32(total) << (headroom - 1u)) + (1u << 13u)) >> 14u);
    buf[P.stats_off + 3u * row] = bitcast<u32>(mx);
    buf[P.stats_off + 3u * row + 1u] = bitcast<u32>(lut(P.recip_off, clamp(shifted - 98304, -32768, 32767)));
    buf[P.stats_off + 3u * row + 2u] = 31u - headroom;
}
