// An integer matrix product in one pass (kernels/qgemm.py), driven by qwords.wgsl: output code e
// from the whole dot product `dot(e, 0u, P.depth)` of the op's source
// (qconv2d.wgsl, qdepthwise.wgsl, qtconv.wgsl, qmatmul.wgsl), rescaled by qgemm_out.wgsl.
//#include "qgemm_out.wgsl"

fn out_code(e: u32) -> i32 {
    return q_rescale(e, dot(e, 0u, P.depth));
}
