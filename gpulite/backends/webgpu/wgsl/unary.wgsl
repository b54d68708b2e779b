// Elementwise unary op: out[i] = act(OP(x)) over contiguous tensors of the same size.

fn run(i: u32) {
    let x = buf[P.x_off + i];
    buf[P.out_off + i] = act($OP);
}
