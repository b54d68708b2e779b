// The row pass shared by int8 / uint8 SOFTMAX and LOG_SOFTMAX (LiteRT's optimized kernels, the
// cpu's softmax.py): the largest of the P.depth codes from element `base`, and the row's table
// values exp(-input_scale * beta * (max - x)) (at P.table_off) summed left to right in f32:
// the order decides the rounding, so one thread sums a row in the CPU's sequential order.

fn row_max(base: u32) -> i32 {
    var mx = -2147483647;
    for (var k = 0u; k < P.depth; k++) {
        mx = max(mx, $LOAD(P.x_off, base + k));
    }
    return mx;
}

fn row_sum(base: u32, mx: i32) -> f32 {
    var sum = 0.0;
    for (var k = 0u; k < P.depth; k++) {
        sum = sum + bitcast<f32>(buf[P.table_off + u32($LOAD(P.x_off, base + k) - mx + 255)]);
    }
    return sum;
}
