// Elementwise binary op with broadcasting: out[i] = finish(OP(a, b), its word, channel of i),
// where finish is the fused activation, a fused PReLU and epilogue steps (kernels/epilogue.py).
// P.shape is the output shape collapsed to 4 dims; P.sa / P.sb are a's and b's strides in
// words over those dims, 0 along a broadcast dim. The output is dense, so the channel (last
// axis) of element i is i % P.channels whatever the collapsing did. Operands are read with ld
// (the arena word) or, for a constant operand in an fp16 plan, wt (float16 widened to f32).
//#include "coords.wgsl"

fn finish(v: $WORD_T, o: u32, c: u32) -> $WORD_T {
    $FINISH
}

fn run(i: u32) {
    let c = coords4(i, P.shape);
    let a = $LOAD_A(P.a_off + dot(c, P.sa));
    let b = $LOAD_B(P.b_off + dot(c, P.sb));
    buf[P.out_off + i] = finish($OP, P.out_off + i, i % P.channels);
}
