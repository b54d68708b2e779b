// REDUCE_ANY / REDUCE_ALL over bool bytes (packed 4 to a word, as the host arena): one output
// word (4 results) per thread; the kept / reduced dims as in reduce.wgsl, in elements.
//#include "coords.wgsl"

fn elem(k: u32) -> bool {
    return ((buf[P.x_off + k / 4u] >> ((k % 4u) * 8u)) & 0xffu) != 0u;
}

fn one(i: u32) -> bool {
    let base = dot(coords4(i, P.kshape), P.kstride);
    var acc = $INIT;
    for (var a = 0u; a < P.rshape.x; a++) {
        for (var b = 0u; b < P.rshape.y; b++) {
            for (var c = 0u; c < P.rshape.z; c++) {
                var p = base + dot(vec3<u32>(a, b, c), P.rstride.xyz);
                for (var d = 0u; d < P.rshape.w; d++) {
                    acc = acc $OPR elem(p);
                    p += P.rstride.w;
                }
            }
        }
    }
    return acc;
}

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < 4u; k++) {
        let e = i * 4u + k;
        if (e >= P.outs) {
            break;
        }
        w |= select(0u, 1u, one(e)) << (k * 8u);
    }
    buf[P.out_off + i] = w;
}
