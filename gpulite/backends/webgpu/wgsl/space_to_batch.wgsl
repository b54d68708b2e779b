// Index map of SPACE_TO_BATCH_ND over [N, H, W, C] (one spatial dim: W = 1, block.y = 1; the
// dims after the spatial ones folded into C). Output batch ob holds input batch ob % N at tile
// offset ob / N = (sh, sw) of the padded input; outside the input it is padding.
//#include "coords.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let c = coords4(e, P.out_shape);
    let n = c.x % P.in_shape.x;
    let off = c.x / P.in_shape.x;
    let h = i32(c.y * P.block.x + off / P.block.y) - P.lead.x;
    let w = i32(c.z * P.block.y + off % P.block.y) - P.lead.y;
    if (h < 0 || w < 0 || h >= i32(P.in_shape.y) || w >= i32(P.in_shape.z)) {
        return NONE;
    }
    return ((n * P.in_shape.y + u32(h)) * P.in_shape.z + u32(w)) * P.in_shape.w + c.w;
}
