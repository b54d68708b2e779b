// An integer matrix product in one pass (kernels/qgemm.py): thread i makes output word i, each
// of its $PER codes from the whole dot product `dot(e, 0u, P.depth)` of the op's source
// (qconv2d.wgsl, qdepthwise.wgsl, qtconv.wgsl, qmatmul.wgsl), rescaled by qgemm_out.wgsl.
//#include "qgemm_out.wgsl"

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < ${PER}u; k++) {
        let e = i * ${PER}u + k;
        if (e >= P.elems) {
            break;
        }
        w |= $PACK(q_rescale(e, dot(e, 0u, P.depth)), k);
    }
    buf[P.out_off + i] = w;
}
