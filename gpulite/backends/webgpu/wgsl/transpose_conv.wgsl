// Transpose convolution (TRANSPOSE_CONV, MediaPipe's Convolution2DTransposeBias), NHWC, as a
// gather: output pixel o sits at full-size position o + pad; input pixel iy contributes
// through tap ky when iy * stride + ky equals that position. Four output channels per
// thread; weights re-laid out to [KH, KW, Cin, Cout4] as for CONV_2D, read with wt4 (float16 in
// fp16 plans).
//#include "nhwc.wgsl"
//#include "conv_out.wgsl"

fn run(i: u32) {
    let p = out_pixel(i, P.groups);
    let oc = p.c * 4u;
    var acc = wt4((P.bias_off + oc) / 4u);
    let fy = i32(p.y) + P.pad_top;
    let fx = i32(p.x) + P.pad_left;
    for (var ky = 0u; ky < P.k_h; ky++) {
        let ty = fy - i32(ky);
        if (ty < 0 || ty % i32(P.stride_h) != 0 || u32(ty) / P.stride_h >= P.in_h) {
            continue;
        }
        let iy = u32(ty) / P.stride_h;
        for (var kx = 0u; kx < P.k_w; kx++) {
            let tx = fx - i32(kx);
            if (tx < 0 || tx % i32(P.stride_w) != 0 || u32(tx) / P.stride_w >= P.in_w) {
                continue;
            }
            let xb = P.x_off + in_index(p.b, iy, u32(tx) / P.stride_w, P.in_c);
            var wb = P.w_off + (ky * P.k_w + kx) * P.in_c * P.out_c4 + oc;
            for (var c = 0u; c < P.in_c; c++) {
                acc += buf[xb + c] * wt4(wb / 4u);
                wb += P.out_c4;
            }
        }
    }
    store4(P.out_off + out_index(p, P.out_c) + oc, oc, P.out_c, acc);
}
