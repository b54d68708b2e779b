// RFFT2D: output element (b, a, k) of [batch, fh, fw/2 + 1] complex64 (two f32 words: re, im)
// is the 2-D DFT of input block b ([P.in_h, P.in_w] float32, cropped or zero-padded to
// [fh, fw]): sum over h, w of x[h, w] * exp(-2 pi i (a h / fh + k w / fw)). The phase index
// m = (a h fw + k w fh) mod (fh fw) is exact integer arithmetic, taken into (-N/2, N/2] so
// that cos / sin see |angle| <= pi. One output element per thread; the sums are
// compensated (Kahan), as LiteRT computes the transform in double.

fn run(i: u32) {
    let cols = P.fw / 2u + 1u;
    let k = i % cols;
    let a = (i / cols) % P.fh;
    let b = i / (cols * P.fh);
    let n = P.fh * P.fw;
    let base = P.x_off + b * P.in_h * P.in_w;
    var re = 0.0;
    var im = 0.0;
    var cre = 0.0;
    var cim = 0.0;
    for (var h = 0u; h < min(P.in_h, P.fh); h++) {
        let ph = ((a * h) % P.fh) * P.fw;
        for (var w = 0u; w < min(P.in_w, P.fw); w++) {
            let m = (ph + ((k * w) % P.fw) * P.fh) % n;
            let angle = -6.283185307179586 * (f32(i32(m) - select(0, i32(n), 2u * m > n)) / f32(n));
            let x = buf[base + h * P.in_w + w];
            let yr = x * cos(angle) - cre;
            let tr = re + yr;
            cre = (tr - re) - yr;
            re = tr;
            let yi = x * sin(angle) - cim;
            let ti = im + yi;
            cim = (ti - im) - yi;
            im = ti;
        }
    }
    buf[P.out_off + 2u * i] = re;
    buf[P.out_off + 2u * i + 1u] = im;
}
