// The register-blocked integer convolutions' shared steps (qconv2d4r.wgsl, qconv2d16r.wgsl,
// qdepthwise4r.wgsl: thread i makes output channels 4q..4q+3 of $R consecutive pixels from p0 on):
// `//#include "qconv_block.wgsl"`. NHWC geometry from P (in_h, in_w, in_c, out_h, out_w, out_c,
// stride, dilation, padding); the output side is qgemm_out.wgsl's.
//#include "qgemm_out.wgsl"
//#include "nhwc.wgsl"

// The window's top-left input cell (y, x) and image of output pixels p0..p0+$R-1 (past the last
// of `pixels`, the last one's).
fn q_window_origins(p0: u32, pixels: u32) -> array<vec3<i32>, $R> {
    var org: array<vec3<i32>, $R>;
    for (var r = 0u; r < ${R}u; r++) {
        let p = min(p0 + r, pixels - 1u);
        org[r] = vec3<i32>(i32(((p / P.out_w) % P.out_h) * P.stride_h) - P.pad_top,
                           i32((p % P.out_w) * P.stride_w) - P.pad_left, i32(p / (P.out_w * P.out_h)));
    }
    return org;
}

// For filter tap `tap` of each of the $R pixels (origins `org`, pixels past `pixels` dead): whether
// the tap reads inside the input (`ok`) and the element of its channel ic0 (`xb`; a clamped cell
// where not ok). True when any pixel's tap is inside.
fn q_tap_cells(org: ptr<function, array<vec3<i32>, $R>>, p0: u32, pixels: u32, tap: u32, ic0: u32,
               ok: ptr<function, array<bool, $R>>, xb: ptr<function, array<u32, $R>>) -> bool {
    var live = false;
    let dy = i32((tap / P.k_w) * P.dil_h);
    let dx = i32((tap % P.k_w) * P.dil_w);
    for (var r = 0u; r < ${R}u; r++) {
        let iy = (*org)[r].x + dy;
        let ix = (*org)[r].y + dx;
        (*ok)[r] = p0 + r < pixels && in_image(iy, ix);
        (*xb)[r] = in_index(u32((*org)[r].z), u32(max(iy, 0)), u32(max(ix, 0)), P.in_c) + ic0;
        live = live || (*ok)[r];
    }
    return live;
}

// Output word q of pixel p (< pixels): the four 8-bit codes of its int32 sums `acc`, rescaled.
fn q_store_codes8(p: u32, q: u32, acc: vec4<i32>) {
    var word = 0u;
    for (var c = 0u; c < 4u; c++) {
        word |= q_byte(q_rescale(p * P.out_c + 4u * q + c, q_i64(acc[c])), c);
    }
    buf[P.out_off + p * (P.out_c / 4u) + q] = word;
}
