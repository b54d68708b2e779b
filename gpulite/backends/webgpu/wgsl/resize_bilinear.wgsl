// RESIZE_BILINEAR, NHWC, one output element per thread, as LiteRT's default path (XNNPACK's
// f32 indirection and ibilinear kernel) rounds it, the cpu kernel's float32 steps:
// per axis the source coordinate o * scale + P.off_* (0 without half-pixel centres) clamped to
// [0, size - 1], its truncation and the next index (clamped), the weight the distance to the
// lower; then t = tl + (tr - tl) * ax, b likewise, out = t + (b - t) * ay. Every product is
// rounded on its own (mul_rounded): a driver contracting it with the add into an FMA would
// round once where XNNPACK's x86 kernel rounds twice.
//#include "nhwc.wgsl"
//#include "qfloat.wgsl"

struct Axis {
    lo: u32,
    hi: u32,
    alpha: f32,
}

fn axis(o: u32, scale: f32, off: f32, size: u32) -> Axis {
    let s = clamp(mul_rounded(f32(o), scale, P.zero) + off, 0.0, f32(size - 1u));
    let lo = u32(s);
    return Axis(lo, min(lo + 1u, size - 1u), s - f32(lo));
}

fn run(i: u32) {
    let p = out_pixel(i, P.c);
    let ya = axis(p.y, P.scale_h, P.off_h, P.in_h);
    let xa = axis(p.x, P.scale_w, P.off_w, P.in_w);
    let base = P.x_off + p.c;
    let tl = buf[base + in_index(p.b, ya.lo, xa.lo, P.c)];
    let tr = buf[base + in_index(p.b, ya.lo, xa.hi, P.c)];
    let bl = buf[base + in_index(p.b, ya.hi, xa.lo, P.c)];
    let br = buf[base + in_index(p.b, ya.hi, xa.hi, P.c)];
    let t = tl + mul_rounded(tr - tl, xa.alpha, P.zero);
    let b = bl + mul_rounded(br - bl, xa.alpha, P.zero);
    buf[P.out_off + i] = t + mul_rounded(b - t, ya.alpha, P.zero);
}
