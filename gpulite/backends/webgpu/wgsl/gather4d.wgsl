// Index map of PAD, SLICE, STRIDED_SLICE and TRANSPOSE (dims merged to 4): output coordinate
// c reads input coordinate begin + c * stride, at element P.base + dot(coordinate, in_strides);
// in_shape / in_strides are permuted for a transpose. Outside in_shape it is padding.

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    var r = e;
    let c3 = r % P.out_shape.w;
    r = r / P.out_shape.w;
    let c2 = r % P.out_shape.z;
    r = r / P.out_shape.z;
    let c = vec4<i32>(vec4<u32>(r / P.out_shape.y, r % P.out_shape.y, c2, c3));
    let s = P.begin + c * P.stride;
    if (any(s < vec4<i32>(0)) || any(s >= vec4<i32>(P.in_shape))) {
        return NONE;
    }
    return P.base + dot(vec4<u32>(s), P.in_strides);
}
