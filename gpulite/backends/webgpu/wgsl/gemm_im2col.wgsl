// gemm.wgsl's A for CONV_2D: row = output pixel (n, y, x), k = (ky, kx, input channel) in the
// weights' OHWI order, read from the NHWC input (zero in the padding). $A_VEC: input channels
// a multiple of 4, so four consecutive k are four channels of one tap (one buf4 load).
//#include "nhwc.wgsl"
const A_VEC: bool = $A_VEC;

// Input element k of output pixel `row`'s window, or -1 in the padding.
fn im2col(row: u32, k: u32) -> i32 {
    let p = out_pixel(row, 1u);
    let tap = k / P.in_c;
    let ky = tap / P.k_w;
    let kx = tap % P.k_w;
    let y = i32(p.y * P.stride_h + ky * P.dil_h) - P.pad_top;
    let x = i32(p.x * P.stride_w + kx * P.dil_w) - P.pad_left;
    if (y < 0 || x < 0 || y >= i32(P.in_h) || x >= i32(P.in_w)) {
        return -1;
    }
    return i32(P.x_off + in_index(p.b, u32(y), u32(x), P.in_c) + k % P.in_c);
}

fn a_one(row: u32, k: u32) -> f32 {
    if (k >= P.k) {
        return 0.0;
    }
    let at = im2col(row, k);
    return select(0.0, buf[max(at, 0)], at >= 0);
}

fn mm_a(b: u32, row: u32, k: u32) -> vec4<f32> {
    if (row >= P.m) {
        return vec4<f32>();
    }
    if (A_VEC) {
        if (k >= P.k) {
            return vec4<f32>();
        }
        let at = im2col(row, k);
        return select(vec4<f32>(), buf4[u32(max(at, 0)) / 4u], at >= 0);
    }
    return vec4<f32>(a_one(row, k), a_one(row, k + 1u), a_one(row, k + 2u), a_one(row, k + 3u));
}
