// Index map of RESIZE_NEAREST_NEIGHBOR, NHWC: the source row and column of every output row
// and column come from tables computed on the host with TFLite's float32 (or 8-bit fixed
// point) arithmetic, so the GPU picks exactly the pixels LiteRT picks.
//#include "nhwc.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let p = out_pixel(e, P.c);
    return in_index(p.b, buf[P.iy_off + p.y], buf[P.ix_off + p.x], P.c) + p.c;
}
