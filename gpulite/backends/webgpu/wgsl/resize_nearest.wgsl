// Index map of RESIZE_NEAREST_NEIGHBOR, NHWC: the source row and column of every output row
// and column come from tables computed on the host with TFLite's float32 (or 8-bit fixed
// point) arithmetic, so the GPU picks exactly the pixels LiteRT picks.

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let c = e % P.c;
    var r = e / P.c;
    let x = r % P.out_w;
    r = r / P.out_w;
    let y = r % P.out_h;
    let b = r / P.out_h;
    return ((b * P.in_h + buf[P.iy_off + y]) * P.in_w + buf[P.ix_off + x]) * P.c + c;
}
