// RESIZE_BILINEAR on integer codes (qwords.wgsl), as the cpu's resize.py: per output row and
// column the tables at P.ytab_off / P.xtab_off hold (lower source index, upper one, weight of
// the upper one) as i32. $BLEND: 8-bit in XNNPACK's Q11 (LiteRT's default path), int16 in
// TFLite's Q10 ResizeBilinearInteger, rounded half away from zero from its 64-bit sum (also int8
// with a size computed at run time); uint8 with such a size as ResizeBilinearGenericSmallChannel.
//#include "nhwc.wgsl"
//#include "qfloat.wgsl"

fn tab(off: u32, i: u32) -> vec3<i32> {
    return vec3<i32>(bitcast<i32>(buf[off + 3u * i]), bitcast<i32>(buf[off + 3u * i + 1u]),
                     bitcast<i32>(buf[off + 3u * i + 2u]));
}

fn x_code(b: u32, y: i32, x: i32, c: u32) -> i32 {
    return $LOAD(P.x_off, in_index(b, u32(y), u32(x), P.c) + c);
}

// Q11: t = (tl << 11) + (tr - tl) * ax, b likewise, ((t << 11) + (b - t) * ay + 2^21) >> 22.
fn blend_q11(tl: i32, tr: i32, bl: i32, br: i32, ax: i32, ay: i32) -> i32 {
    let t = (tl << 11u) + (tr - tl) * ax;
    let b = (bl << 11u) + (br - bl) * ax;
    return ((t << 11u) + (b - t) * ay + (1 << 21u)) >> 22u;
}

// Q10: acc = top * (1024 - ay) + bottom * ay with top = tl * (1024 - ax) + tr * ax (< 2^26),
// up to 2^36: kept as a * 1024 + r (r in [0, 1024)) from the tables' 10-bit halves, then
// (acc +- 2^19) / 2^20 truncated, as the C code's int64 arithmetic.
fn blend_q10(tl: i32, tr: i32, bl: i32, br: i32, ax: i32, ay: i32) -> i32 {
    let top = tl * (1024 - ax) + tr * ax;
    let bottom = bl * (1024 - ax) + br * ax;
    let hi = (top >> 10u) * (1024 - ay) + (bottom >> 10u) * ay;
    let lo = (top & 1023) * (1024 - ay) + (bottom & 1023) * ay;  // in [0, 2^20)
    let a = hi + (lo >> 10u);
    let r = lo & 1023;
    if (a > 0 || (a == 0 && r > 0)) {
        return (a + 512) >> 10u;
    }
    let d = 512 - a;
    return -(select(d, d - 1, r > 0) >> 10u);
}

// ResizeBilinearGenericSmallChannel (uint8): ax, ay the upper indices' float32 weights' bits; the
// codes times the corners' weight products, summed left to right, plus 0.5, truncated, as LiteRT's
// x86 build: every product and partial sum rounded on its own (mul_rounded; by 1.0 for the sums,
// which keeps a compiler from fusing or regrouping them: Mesa's moved the 0.5 into the last add).
fn blend_small(tl: i32, tr: i32, bl: i32, br: i32, ax: i32, ay: i32) -> i32 {
    let dx = bitcast<f32>(ax);
    let dy = bitcast<f32>(ay);
    let ex = 1.0 - dx;
    let ey = 1.0 - dy;
    var v = mul_rounded(mul_rounded(f32(tl), mul_rounded(ey, ex, P.zero), P.zero)
                        + mul_rounded(f32(tr), mul_rounded(ey, dx, P.zero), P.zero), 1.0, P.zero);
    v = mul_rounded(v + mul_rounded(f32(bl), mul_rounded(dy, ex, P.zero), P.zero), 1.0, P.zero);
    v = mul_rounded(v + mul_rounded(f32(br), mul_rounded(dy, dx, P.zero), P.zero), 1.0, P.zero);
    return i32(v + 0.5);
}

fn out_code(e: u32) -> i32 {
    let p = out_pixel(e, P.c);
    let ty = tab(P.ytab_off, p.y);
    let tx = tab(P.xtab_off, p.x);
    return $BLEND(x_code(p.b, ty.x, tx.x, p.c), x_code(p.b, ty.x, tx.y, p.c), x_code(p.b, ty.y, tx.x, p.c),
                  x_code(p.b, ty.y, tx.y, p.c), tx.z, ty.z);
}
