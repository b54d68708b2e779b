// DEPTH_TO_SPACE (TFLite's DCR order), NHWC, one output element per thread.

fn run(i: u32) {
    let c = i % P.out_c;
    var r = i / P.out_c;
    let x = r % P.out_w;
    r = r / P.out_w;
    let y = r % P.out_h;
    let b = r / P.out_h;
    let ic = ((y % P.block) * P.block + x % P.block) * P.out_c + c;
    buf[P.out_off + i] = buf[P.x_off + ((b * P.in_h + y / P.block) * P.in_w + x / P.block) * P.in_c + ic];
}
