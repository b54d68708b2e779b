// CONV_2D on 8-bit codes, register-blocked (kernels/qconv.py's word path when the dot product
// fits one thread): thread i makes output word q = i % (out_c / 4) (four channels) of $R
// consecutive pixels from (i / (out_c / 4)) * $R on, so each filter word feeds $R pixels; the
// filter is [KH*KW*group_c, out_c] (out_c % 4 == 0; a grouped conv's groups have group_c input
// and group_out output channels, group_out % 4 == 0; $XWORDS: group_c % 4 == 0 too, and four
// input channels a step). The sums are qconv2d4.wgsl's, rescaled by qgemm_out.wgsl
// (through qconv_block.wgsl).
//#include "qconv_block.wgsl"

fn run(i: u32) {
    let n4 = P.out_c / 4u;
    let q = i % n4;
    let p0 = (i / n4) * ${R}u;
    let pixels = P.elems / P.out_c;
    var acc: array<vec4<i32>, $R>;
    var xb: array<u32, $R>;  // word of the tap's first channel for each pixel
    var ok: array<bool, $R>;
    let in4 = P.group_c / 4u;
    let ic0 = ((4u * q) / P.group_out) * P.group_c;  // the group's first input channel
    var org = q_window_origins(p0, pixels);
    for (var tap = 0u; tap < P.k_h * P.k_w; tap++) {
        if (!q_tap_cells(&org, p0, pixels, tap, ic0, &ok, &xb)) {
            continue;
        }
        var w = P.w_off + tap * P.group_c * n4 + q;
        if ($XWORDS) {  // group_c % 4 == 0: four input channels a word
            for (var c = 0u; c < in4; c++) {
                let w0 = $UW(buf[w]) - P.w_zp;
                let w1 = $UW(buf[w + n4]) - P.w_zp;
                let w2 = $UW(buf[w + 2u * n4]) - P.w_zp;
                let w3 = $UW(buf[w + 3u * n4]) - P.w_zp;
                w += 4u * n4;
                for (var r = 0u; r < ${R}u; r++) {
                    if (ok[r]) {
                        let x = $UX(buf[P.x_off + xb[r] / 4u + c]) - P.x_zp;
                        acc[r] += x.x * w0 + x.y * w1 + x.z * w2 + x.w * w3;
                    }
                }
            }
        } else {  // one input channel at a time
            for (var c = 0u; c < P.group_c; c++) {
                let wc = $UW(buf[w]) - P.w_zp;
                w += n4;
                for (var r = 0u; r < ${R}u; r++) {
                    if (ok[r]) {
                        acc[r] += ($LX(P.x_off, xb[r] + c) - P.x_zp) * wc;
                    }
                }
            }
        }
    }
    for (var r = 0u; r < ${R}u && p0 + r < pixels; r++) {
        q_store_codes8(p0 + r, q, acc[r]);
    }
}
