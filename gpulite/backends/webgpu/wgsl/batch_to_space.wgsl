// Index map of BATCH_TO_SPACE_ND over [N, H, W, C] outputs (one spatial dim: W = 1, block.y
// = 1; trailing dims folded into C): output (n, oh, ow) is the cropped position (h, w) =
// (oh, ow) + lead, read from input batch ((h % bh) * bw + w % bw) * N + n at (h / bh, w / bw).
//#include "coords.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let c = coords4(e, P.out_shape);
    let h = c.y + u32(P.lead.x);
    let w = c.z + u32(P.lead.y);
    let b = ((h % P.block.x) * P.block.y + w % P.block.y) * P.out_shape.x + c.x;
    return ((b * P.in_shape.y + h / P.block.x) * P.in_shape.z + w / P.block.y) * P.in_shape.w + c.w;
}
