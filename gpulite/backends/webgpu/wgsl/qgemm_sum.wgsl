// The second pass of a long integer dot product (kernels/qgemm.py), driven by qwords.wgsl: output
// code e from the sum of its element's P.slices partials (qgemm_part.wgsl; 64-bit adds,
// so the total is the one-pass sum), rescaled by qgemm_out.wgsl.
//#include "qgemm_out.wgsl"

fn out_code(e: u32) -> i32 {
    var a = vec2<u32>(0u, 0u);
    for (var s = 0u; s < P.slices; s++) {
        let j = P.part_off + 2u * (e * P.slices + s);
        a = q_add64(a, vec2<u32>(buf[j], buf[j + 1u]));
    }
    return q_rescale(e, a);
}
