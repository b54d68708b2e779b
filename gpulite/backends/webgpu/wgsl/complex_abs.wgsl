// COMPLEX_ABS: out[i] = |z| of complex64 element i (words 2i, 2i + 1 of the input: re, im).

fn run(i: u32) {
    let re = buf[P.x_off + 2u * i];
    let im = buf[P.x_off + 2u * i + 1u];
    buf[P.out_off + i] = $OP;
}
