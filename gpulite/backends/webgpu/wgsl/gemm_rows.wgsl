// gemm.wgsl's A for FULLY_CONNECTED and 1x1 stride-1 unpadded CONV_2D: the input as a row-major
// [P.m, P.k] matrix at P.x_off. $A_VEC: rows start on a vec4 (P.k and P.x_off multiples of 4),
// read through buf4. a_scale: what is applied to the four values of columns k.. as they are
// read (a CONV_2D's node.input_scale: a fused MUL by a per-channel factor), else nothing.
const A_VEC: bool = $A_VEC;

fn a_scale(k: u32, v: vec4<f32>) -> vec4<f32> {
    $A_SCALE
}

fn mm_a(b: u32, row: u32, k: u32) -> vec4<f32> {
    if (row >= P.m || k >= P.k) {
        return vec4<f32>();
    }
    let at = P.x_off + row * P.k + k;
    if (A_VEC) {
        return a_scale(k, buf4[at / 4u]);
    }
    let n = P.k - k;
    return a_scale(k, vec4<f32>(buf[at], select(0.0, buf[at + 1u], n > 1u), select(0.0, buf[at + 2u], n > 2u),
                                select(0.0, buf[at + 3u], n > 3u)));
}
