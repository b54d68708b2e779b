// CONV_2D in the 16x8 mode (int16 codes, int8 filter), register-blocked as qconv2d4r.wgsl: thread
// i makes output channels 4q..4q+3 (q = i % (out_c / 4), within one group) of $R consecutive
// pixels, each filter word ([KH*KW*group_c, out_c], int8) feeding $R pixels. The products (at
// most 2^22) are summed in int32 over at most 256 input channels, then added into int64
// accumulators (16x8 sums pass 2^31), rescaled by qgemm_out.wgsl and stored as two words of
// int16 codes per pixel.
//#include "qconv_block.wgsl"

fn run(i: u32) {
    let n4 = P.out_c / 4u;
    let q = i % n4;
    let p0 = (i / n4) * ${R}u;
    let pixels = P.elems / P.out_c;
    let ic0 = ((4u * q) / P.group_out) * P.group_c;
    var acc: array<array<vec2<u32>, 4>, $R>;
    var part: array<vec4<i32>, $R>;
    var xb: array<u32, $R>;
    var ok: array<bool, $R>;
    var org = q_window_origins(p0, pixels);
    for (var tap = 0u; tap < P.k_h * P.k_w; tap++) {
        if (!q_tap_cells(&org, p0, pixels, tap, ic0, &ok, &xb)) {
            continue;
        }
        var w = P.w_off + tap * P.group_c * n4 + q;
        for (var c0 = 0u; c0 < P.group_c; c0 += 256u) {
            for (var c = c0; c < min(c0 + 256u, P.group_c); c++) {
                let wc = $UW(buf[w]) - P.w_zp;
                w += n4;
                for (var r = 0u; r < ${R}u; r++) {
                    if (ok[r]) {
                        part[r] += (q_load_i16(P.x_off, xb[r] + c) - P.x_zp) * wc;
                    }
                }
            }
            for (var r = 0u; r < ${R}u; r++) {
                for (var k = 0u; k < 4u; k++) {
                    acc[r][k] = q_add64(acc[r][k], q_i64(part[r][k]));
                }
                part[r] = vec4<i32>(0);
            }
        }
    }
    for (var r = 0u; r < ${R}u; r++) {
        let p = p0 + r;
        if (p < pixels) {
            let e = p * P.out_c + 4u * q;
            buf[P.out_off + e / 2u] = q_half(q_rescale(e, acc[r][0]), 0u) | q_half(q_rescale(e + 1u, acc[r][1]), 1u);
            buf[P.out_off + e / 2u + 1u] = q_half(q_rescale(e + 2u, acc[r][2]), 0u)
                | q_half(q_rescale(e + 3u, acc[r][3]), 1u);
        }
    }
}
