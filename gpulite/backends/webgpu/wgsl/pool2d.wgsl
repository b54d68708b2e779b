// MAX_POOL_2D / AVERAGE_POOL_2D, NHWC, one output element per thread.
// As TFLite, the average counts only window cells inside the input (padding is not a zero).

fn run(i: u32) {
    let c = i % P.c;
    var r = i / P.c;
    let ox = r % P.out_w;
    r = r / P.out_w;
    let oy = r % P.out_h;
    let b = r / P.out_h;
    let iy0 = i32(oy * P.stride_h) - P.pad_top;
    let ix0 = i32(ox * P.stride_w) - P.pad_left;
    let y0 = u32(max(iy0, 0));
    let y1 = u32(min(iy0 + i32(P.k_h), i32(P.in_h)));
    let x0 = u32(max(ix0, 0));
    let x1 = u32(min(ix0 + i32(P.k_w), i32(P.in_w)));
    var acc = $INIT;
    for (var y = y0; y < y1; y++) {
        for (var x = x0; x < x1; x++) {
            let v = buf[P.x_off + ((b * P.in_h + y) * P.in_w + x) * P.c + c];
            acc = $REDUCE;
        }
    }
    let count = f32(max(y1, y0) - y0) * f32(max(x1, x0) - x0);
    buf[P.out_off + i] = act($FINISH);
}
