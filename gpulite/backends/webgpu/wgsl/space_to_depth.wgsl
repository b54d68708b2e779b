// Index map of SPACE_TO_DEPTH, NHWC: output (b, y, x, c) with c = (dy * block + dx) * in_c + ic
// reads input (b, y * block + dy, x * block + dx, ic).
//#include "nhwc.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let p = out_pixel(e, P.out_c);
    let d = p.c / P.in_c;
    return in_index(p.b, p.y * P.block + d / P.block, p.x * P.block + d % P.block, P.in_c) + p.c % P.in_c;
}
