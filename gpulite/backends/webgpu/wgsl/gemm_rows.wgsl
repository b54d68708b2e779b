// gemm.wgsl's A for FULLY_CONNECTED and 1x1 stride-1 unpadded CONV_2D: the input as a row-major
// [P.m, P.k] matrix at P.x_off. $A_VEC: rows start on a vec4 (P.k and P.x_off multiples of 4),
// read through buf4.
const A_VEC: bool = $A_VEC;

fn mm_a(b: u32, row: u32, k: u32) -> vec4<f32> {
    if (row >= P.m || k >= P.k) {
        return vec4<f32>();
    }
    let at = P.x_off + row * P.k + k;
    if (A_VEC) {
        return buf4[at / 4u];
    }
    let n = P.k - k;
    return vec4<f32>(buf[at], select(0.0, buf[at + 1u], n > 1u), select(0.0, buf[at + 2u], n > 2u),
                     select(0.0, buf[at + 3u], n > 3u));
}
