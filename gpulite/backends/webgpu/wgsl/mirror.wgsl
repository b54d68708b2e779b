// Index map of MIRROR_PAD (4 dims): output coordinate c is input coordinate c - before,
// reflected at the edges: REFLECT (P.sym = 0) mirrors around the edge element, SYMMETRIC
// (P.sym = 1) repeats it. Pads never exceed the input (the CPU kernel's check), so one
// reflection suffices.
//#include "coords.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let n = vec4<i32>(P.in_shape);
    var s = vec4<i32>(coords4(e, P.out_shape)) - P.before;
    let m = i32(P.sym);
    s = select(s, -s - m, s < vec4<i32>(0));
    s = select(s, 2 * n - s - 2 + m, s >= n);
    return dot(vec4<u32>(s), P.in_strides);
}
