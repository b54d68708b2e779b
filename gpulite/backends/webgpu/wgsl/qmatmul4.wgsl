// FULLY_CONNECTED on 8-bit codes, four units and four input features at a time (the word path of
// kernels/qmatmul.py: depth % 4 == 0, units % 4 == 0): dot4(e0, k0, k1) sums products k0..k1
// (multiples of 4) of row e0 / out_c, units e0 % out_c + 0..3; one input word holds four
// features, the weights re-laid out as [depth, units] one word per k the four units'.
//#include "qmath.wgsl"

fn dot4(e0: u32, k0: u32, k1: u32) -> vec4<i32> {
    let n4 = P.out_c / 4u;
    let wq = P.w_off + (e0 % P.out_c) / 4u;
    let xr = P.x_off + (e0 / P.out_c) * (P.depth / 4u);
    var acc = vec4<i32>(0);
    for (var k = k0; k < k1; k += 4u) {
        let x = $UX(buf[xr + k / 4u]) - P.x_zp;
        let w = wq + k * n4;
        acc += x.x * ($UW(buf[w]) - P.w_zp) + x.y * ($UW(buf[w + n4]) - P.w_zp)
             + x.z * ($UW(buf[w + 2u * n4]) - P.w_zp) + x.w * ($UW(buf[w + 3u * n4]) - P.w_zp);
    }
    return acc;
}
