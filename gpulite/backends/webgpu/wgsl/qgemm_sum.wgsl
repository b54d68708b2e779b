// The second pass of a long integer dot product (kernels/qgemm.py): thread i makes output word
// i, each code from the sum of its element's P.slices partials (qgemm_part.wgsl; 64-bit adds,
// so the total is the one-pass sum), rescaled by qgemm_out.wgsl.
//#include "qgemm_out.wgsl"

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < ${PER}u; k++) {
        let e = i * ${PER}u + k;
        if (e >= P.elems) {
            break;
        }
        var a = vec2<u32>(0u, 0u);
        for (var s = 0u; s < P.slices; s++) {
            let j = P.part_off + 2u * (e * P.slices + s);
            a = q_add64(a, vec2<u32>(buf[j], buf[j + 1u]));
        }
        w |= $PACK(q_rescale(e, a), k);
    }
    buf[P.out_off + i] = w;
}
