// Index map of DEPTH_TO_SPACE (TFLite's DCR order), NHWC: output (b, y, x, c) reads input
// (b, y / block, x / block, ((y % block) * block + x % block) * out_c + c).
//#include "nhwc.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let p = out_pixel(e, P.out_c);
    let ic = ((p.y % P.block) * P.block + p.x % P.block) * P.out_c + p.c;
    return in_index(p.b, p.y / P.block, p.x / P.block, P.in_c) + ic;
}
