// MEAN, SUM, REDUCE_MAX, REDUCE_MIN: one output element per thread. The kept dims
// (P.kshape / P.kstride, merged to 4) locate the output's first input element; the reduced
// dims (P.rshape / P.rstride, merged to 4) are walked in row-major order, the order LiteRT
// accumulates in. buf is f32 or i32 words ($INIT etc. are written for that type).
//#include "coords.wgsl"

fn run(i: u32) {
    let base = P.x_off + dot(coords4(i, P.kshape), P.kstride);
    var acc = $INIT;
    for (var a = 0u; a < P.rshape.x; a++) {
        for (var b = 0u; b < P.rshape.y; b++) {
            for (var c = 0u; c < P.rshape.z; c++) {
                var p = base + dot(vec3<u32>(a, b, c), P.rstride.xyz);
                for (var d = 0u; d < P.rshape.w; d++) {
                    let v = buf[p];
                    acc = $REDUCE;
                    p += P.rstride.w;
                }
            }
        }
    }
    buf[P.out_off + i] = $FINISH;
}
