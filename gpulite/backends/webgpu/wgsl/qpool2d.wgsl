// MAX_POOL_2D / AVERAGE_POOL_2D on integer codes, NHWC, one output element per out_code call
// (qwords.wgsl builds the words). As LiteRT, the average counts only window cells inside the
// input and divides with rounding half away from zero; the result is clamped to [P.lo, P.hi].
//#include "window.wgsl"

fn x_code(e: u32) -> i32 {
    return $LOAD;
}

fn out_code(i: u32) -> i32 {
    let p = out_pixel(i, P.c);
    let win = window(p, vec2<u32>(1u));
    var acc = $INIT;
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let v = x_code(in_index(p.b, cell.x, cell.y, P.c) + p.c);
            acc = $REDUCE;
        }
    }
    let cells = max(win.taps.yw, win.taps.xz) - win.taps.xz;  // taps inside, per dimension
    let count = i32(cells.x * cells.y);
    return clamp($FINISH, P.lo, P.hi);
}
