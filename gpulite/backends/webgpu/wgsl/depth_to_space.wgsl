// Index map of DEPTH_TO_SPACE (TFLite's DCR order), NHWC: output (b, y, x, c) reads input
// (b, y / block, x / block, ((y % block) * block + x % block) * out_c + c).

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let c = e % P.out_c;
    var r = e / P.out_c;
    let x = r % P.out_w;
    r = r / P.out_w;
    let y = r % P.out_h;
    let b = r / P.out_h;
    let ic = ((y % P.block) * P.block + x % P.block) * P.out_c + c;
    return ((b * P.in_h + y / P.block) * P.in_w + x / P.block) * P.in_c + ic;
}
