// DEPTHWISE_CONV_2D with multiplier 1 and channels a multiple of 4, NHWC, register-blocked:
// each thread computes four consecutive output columns of four channels (a vec4 each), bias and
// activation fused. Per filter row it loads the $COLS input pixels its four windows span once
// (vec4s through buf4, zero in the padding) and each tap's four weights once (wt4: float16 in
// fp16 plans), which then serve all four columns. $KW, $SW and $DW (filter width, column stride
// and dilation) are constants of the pipeline, so the inner loops unroll. Threads run channels
// fastest, so neighbours read neighbouring vec4s. Inputs and weights are held as $MT (f16 in fp16
// plans: each tap's product in f16, added to the f32 accumulator; kernels/conv.py).
//#include "nhwc.wgsl"
//#include "conv_out.wgsl"

const KW: u32 = $KW;
const SW: u32 = $SW;
const DW: u32 = $DW;

fn run(i: u32) {
    let c4 = i % P.c4;
    var r = i / P.c4;
    let x0 = (r % P.col_blocks) * 4u;
    r = r / P.col_blocks;
    let y = r % P.out_h;
    let b = r / P.out_h;
    let c = c4 * 4u;
    let ch = P.c4 * 4u;
    let bias = wt4((P.bias_off + c) / 4u);
    var acc = array<vec4<f32>, 4>(bias, bias, bias, bias);
    let iy0 = i32(y * P.stride_h) - P.pad_top;
    let ix0 = i32(x0 * SW) - P.pad_left;
    for (var ky = 0u; ky < P.k_h; ky++) {
        let iy = iy0 + i32(ky * P.dil_h);
        if (iy < 0 || iy >= i32(P.in_h)) {
            continue;
        }
        let row = (P.x_off + in_index(b, u32(iy), 0u, ch) + c) / 4u;
        var xs: array<vec4<$MT>, $COLS>;
        for (var t = 0u; t < ${COLS}u; t++) {
            let ix = ix0 + i32(t);
            if (ix >= 0 && ix < i32(P.in_w)) {
                xs[t] = vec4<$MT>(buf4[row + u32(ix) * P.c4]);
            }
        }
        let wrow = (P.w_off + ky * KW * ch + c) / 4u;
        for (var kx = 0u; kx < KW; kx++) {
            let w = vec4<$MT>(wt4(wrow + kx * P.c4));
            for (var j = 0u; j < 4u; j++) {
                acc[j] += vec4<f32>(xs[j * SW + kx * DW] * w);
            }
        }
    }
    for (var j = 0u; j < 4u; j++) {
        if (x0 + j < P.out_w) {
            let a = acc[j];
            let o = P.out_off + out_index(Pixel(b, y, x0 + j, 0u), ch) + c;
            buf4[o / 4u] = vec4<f32>(finish(a.x, o, c), finish(a.y, o + 1u, c + 1u), finish(a.z, o + 2u, c + 2u),
                                     finish(a.w, o + 3u, c + 3u));
        }
    }
}
