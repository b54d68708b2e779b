// A float32 unary op on a DEQUANTIZE's output as a table (kernels/dequantized_table.py): element
// e's code is round(x / P.scale) + P.zp (exact: x is that code dequantized), its output the
// table's float32 bits at that code (P.t_off, lowest code P.lo first).

fn run(i: u32) {
    let x = bitcast<f32>(buf[P.x_off + i]);
    let code = clamp(i32(round(x / P.scale)) + P.zp, P.lo, P.hi);
    buf[P.out_off + i] = buf[P.t_off + u32(code - P.lo)];
}
