// The output side of the integer matrix products (kernels/qgemm.py): `//#include "qgemm_out.wgsl"`.
// Output element e (channel e % P.out_c) gets its 64-bit accumulator plus the int64 bias of its
// channel (P.bias_off: [lo, hi] words per channel, zeros without a bias), rescaled by $RESCALE
// (one of qmath.wgsl's forms, with m and s the channel's multiplier and shift from the table
// at P.mul_off: [m, shift] per entry, P.mul_n entries, 1 for per-tensor), plus the output zero
// point, clamped to [P.lo, P.hi] (the dtype's range narrowed by the fused activation).
//#include "qmath.wgsl"
//#include "qfloat.wgsl"

fn q_rescale(e: u32, acc: vec2<u32>) -> i32 {
    let c = e % P.out_c;
    let t = P.mul_off + 2u * (c % P.mul_n);
    let m = bitcast<i32>(buf[t]);
    let s = bitcast<i32>(buf[t + 1u]);
    let a = q_add64(acc, vec2<u32>(buf[P.bias_off + 2u * c], buf[P.bias_off + 2u * c + 1u]));
    return q_out($RESCALE, P.out_zp, P.lo, P.hi);
}
