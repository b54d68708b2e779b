// DEPTHWISE_CONV_2D on 8-bit codes, register-blocked (kernels/qconv.py's word path when the
// window fits one thread): thread i makes output word q = i % (out_c / 4) (four channels) of $R
// consecutive pixels from (i / (out_c / 4)) * $R on, so each filter word feeds $R pixels
// (multiplier 1, channels % 4 == 0). The sums are qdepthwise4.wgsl's, rescaled by qgemm_out.wgsl.
//#include "qgemm_out.wgsl"

fn run(i: u32) {
    let n4 = P.out_c / 4u;
    let q = i % n4;
    let p0 = (i / n4) * ${R}u;
    let pixels = P.elems / P.out_c;
    var acc: array<vec4<i32>, $R>;
    var y0: array<i32, $R>;  // the window's top-left input cell and image of each pixel
    var x0: array<i32, $R>;
    var img: array<u32, $R>;
    for (var r = 0u; r < ${R}u; r++) {
        let p = min(p0 + r, pixels - 1u);
        y0[r] = i32(((p / P.out_w) % P.out_h) * P.stride_h) - P.pad_top;
        x0[r] = i32((p % P.out_w) * P.stride_w) - P.pad_left;
        img[r] = p / (P.out_w * P.out_h);
    }
    for (var t = 0u; t < P.depth; t++) {
        let w = $UW(buf[P.w_off + t * n4 + q]) - P.w_zp;
        let dy = i32((t / P.k_w) * P.dil_h);
        let dx = i32((t % P.k_w) * P.dil_w);
        for (var r = 0u; r < ${R}u; r++) {
            let iy = y0[r] + dy;
            let ix = x0[r] + dx;
            if (iy >= 0 && iy < i32(P.in_h) && ix >= 0 && ix < i32(P.in_w)) {
                let x = $UX(buf[P.x_off + ((img[r] * P.in_h + u32(iy)) * P.in_w + u32(ix)) * n4 + q]) - P.x_zp;
                acc[r] += x * w;
            }
        }
    }
    for (var r = 0u; r < ${R}u; r++) {
        let p = p0 + r;
        if (p < pixels) {
            var word = 0u;
            for (var c = 0u; c < 4u; c++) {
                word |= q_byte(q_rescale(p * P.out_c + 4u * q + c, q_i64(acc[r][c])), c);
            }
            buf[P.out_off + p * n4 + q] = word;
        }
    }
}
