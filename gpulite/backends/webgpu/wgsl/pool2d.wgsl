// MAX_POOL_2D / AVERAGE_POOL_2D, NHWC, one output element per thread.
// As TFLite, the average counts only window cells inside the input (padding is not a zero).
//#include "window.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.c);
    let win = window(p, vec2<u32>(1u));
    var acc = $INIT;
    for (var ky = win.taps.x; ky < win.taps.y; ky++) {
        for (var kx = win.taps.z; kx < win.taps.w; kx++) {
            let cell = window_cell(win, ky, kx);
            let v = buf[P.x_off + in_index(p.b, cell.x, cell.y, P.c) + p.c];
            acc = $REDUCE;
        }
    }
    let cells = max(win.taps.yw, win.taps.xz) - win.taps.xz;  // taps inside, per dimension
    let count = f32(cells.x) * f32(cells.y);
    buf[P.out_off + i] = act($FINISH);
}
