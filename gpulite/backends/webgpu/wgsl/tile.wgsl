// Index map of TILE and BROADCAST_TO (dims of size 1 in the output dropped, 4 kept): output
// coordinate c reads input coordinate c % in_shape (a size-1 input dim repeats its element).
//#include "coords.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    return dot(coords4(e, P.out_shape) % P.in_shape, P.in_strides);
}
