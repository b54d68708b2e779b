// Index map of SPACE_TO_DEPTH, NHWC: output (b, y, x, c) with c = (dy * block + dx) * in_c + ic
// reads input (b, y * block + dy, x * block + dx, ic).

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let c = e % P.out_c;
    var r = e / P.out_c;
    let x = r % P.out_w;
    r = r / P.out_w;
    let y = r % P.out_h;
    let b = r / P.out_h;
    let ic = c % P.in_c;
    let d = c / P.in_c;
    return ((b * P.in_h + y * P.block + d / P.block) * P.in_w + x * P.block + d % P.block) * P.in_c + ic;
}
