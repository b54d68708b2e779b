// Float32 SQRT / RSQRT standing for an int8 / int16 one under quantized="float"
// (kernels/activations.py): out = OP(max(value, 0)), and the code the value stands for checked:
// k = round(value * P.inv_scale) (half to even, as QUANTIZE rounds) is its distance from the
// zero point; below it (k < 0: a negative value, on which LiteRT fails the invoke) the thread
// adds 1 to abuf[P.check_off] and raises abuf[P.check_off + 1] to -k (at most P.depth: the
// dtype's least code). Words are u32 (bitcast): the atomics take binding 2.

fn run(i: u32) {
    let value = bitcast<f32>(buf[P.x_off + i]);
    let k = round(value * P.inv_scale);
    if (k < 0.0) {
        atomicAdd(&abuf[P.check_off], 1u);
        atomicMax(&abuf[P.check_off + 1u], u32(min(-k, f32(P.depth))));
    }
    let x = max(value, 0.0);
    buf[P.out_off + i] = bitcast<u32>($OP);
}
