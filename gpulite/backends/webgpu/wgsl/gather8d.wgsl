// gather4d.wgsl for up to 8 dims (after merging): the outer four dims in the *_hi fields, the
// inner four in *_lo; output coordinate c reads input coordinate begin + c * stride, at element
// P.base + dot(coordinate, in_strides); outside in_shape it is padding.
//#include "coords.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let n_lo = P.out_lo.x * P.out_lo.y * P.out_lo.z * P.out_lo.w;
    let s_hi = P.begin_hi + vec4<i32>(coords4(e / n_lo, P.out_hi)) * P.stride_hi;
    let s_lo = P.begin_lo + vec4<i32>(coords4(e % n_lo, P.out_lo)) * P.stride_lo;
    if (any(s_hi < vec4<i32>(0)) || any(s_hi >= vec4<i32>(P.in_hi)) || any(s_lo < vec4<i32>(0))
        || any(s_lo >= vec4<i32>(P.in_lo))) {
        return NONE;
    }
    return P.base + dot(vec4<u32>(s_hi), P.strides_hi) + dot(vec4<u32>(s_lo), P.strides_lo);
}
