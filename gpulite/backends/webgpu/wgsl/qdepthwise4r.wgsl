// DEPTHWISE_CONV_2D on 8-bit codes, register-blocked (kernels/qconv.py's word path when the
// window fits one thread): thread i makes output word q = i % (out_c / 4) (four channels) of $R
// consecutive pixels from (i / (out_c / 4)) * $R on, so each filter word feeds $R pixels
// (multiplier 1, channels % 4 == 0). The sums are qdepthwise4.wgsl's, rescaled by qgemm_out.wgsl
// (through qconv_block.wgsl).
//#include "qconv_block.wgsl"

fn run(i: u32) {
    let n4 = P.out_c / 4u;
    let q = i % n4;
    let p0 = (i / n4) * ${R}u;
    let pixels = P.elems / P.out_c;
    var acc: array<vec4<i32>, $R>;
    var org = q_window_origins(p0, pixels);
    for (var t = 0u; t < P.depth; t++) {
        let w = $UW(buf[P.w_off + t * n4 + q]) - P.w_zp;
        let dy = i32((t / P.k_w) * P.dil_h);
        let dx = i32((t % P.k_w) * P.dil_w);
        for (var r = 0u; r < ${R}u; r++) {
            let iy = org[r].x + dy;
            let ix = org[r].y + dx;
            if (in_image(iy, ix)) {
                let x = $UX(buf[P.x_off + in_index(u32(org[r].z), u32(iy), u32(ix), n4) + q]) - P.x_zp;
                acc[r] += x * w;
            }
        }
    }
    for (var r = 0u; r < ${R}u && p0 + r < pixels; r++) {
        q_store_codes8(p0 + r, q, acc[r]);
    }
}
