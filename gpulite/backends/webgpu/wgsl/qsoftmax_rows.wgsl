// int8 / uint8 SOFTMAX, first pass (LiteRT's optimized kernel, the cpu's softmax.py): one
// thread per row of P.depth codes finds the largest code, sums the row's table values
// exp(-input_scale * beta * (max - x)) left to right in f32 (the order decides the rounding,
// so it is the CPU's sequential one), and stores the max and 1 / (sum * output_scale) at
// P.stats_off + 2 * row. The second pass (qsoftmax.wgsl) writes the codes.
//#include "qmath.wgsl"
//#include "qfloat.wgsl"

fn run(row: u32) {
    let base = row * P.depth;
    var mx = -2147483647;
    for (var k = 0u; k < P.depth; k++) {
        mx = max(mx, $LOAD(P.x_off, base + k));
    }
    var sum = 0.0;
    for (var k = 0u; k < P.depth; k++) {
        sum = sum + bitcast<f32>(buf[P.table_off + u32($LOAD(P.x_off, base + k) - mx + 255)]);
    }
    buf[P.stats_off + 2u * row] = bitcast<u32>(mx);
    buf[P.stats_off + 2u * row + 1u] = bitcast<u32>(recip_rne(mul_rounded(sum, P.out_scale, P.zero)));
}
