// Index map of PAD, SLICE, STRIDED_SLICE and TRANSPOSE (dims merged to 4): output coordinate
// c reads input coordinate begin + c * stride, at element P.base + dot(coordinate, in_strides);
// in_shape / in_strides are permuted for a transpose. Outside in_shape it is padding.
//#include "coords.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let c = vec4<i32>(coords4(e, P.out_shape));
    let s = P.begin + c * P.stride;
    if (any(s < vec4<i32>(0)) || any(s >= vec4<i32>(P.in_shape))) {
        return NONE;
    }
    return P.base + dot(vec4<u32>(s), P.in_strides);
}
