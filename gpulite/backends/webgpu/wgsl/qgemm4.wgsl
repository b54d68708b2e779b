// An 8-bit integer matrix product in one pass, four channels a thread (kernels/qgemm.py's word
// path): thread i makes output word i, codes 4i..4i+3 (four consecutive channels of one pixel
// or row: out_c % 4 == 0) from `dot4(4i, 0u, P.depth)` of the op's source (qmatmul4.wgsl;
// qconv2d4.wgsl's convs take the register-blocked qconv2d4r.wgsl instead when they fit one
// thread), rescaled by qgemm_out.wgsl.
//#include "qgemm_out.wgsl"

fn run(i: u32) {
    let a = dot4(4u * i, 0u, P.depth);
    var w = 0u;
    for (var c = 0u; c < 4u; c++) {
        w |= q_byte(q_rescale(4u * i + c, q_i64(a[c])), c);
    }
    buf[P.out_off + i] = w;
}
