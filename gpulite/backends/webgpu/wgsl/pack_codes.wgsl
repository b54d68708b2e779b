// i32 values (already in range) packed into an int8 ($BITS 8) or int16 ($BITS 16) tensor, one
// thread per output word: element e = (row e / width, column e % width) reads
// src[src_off + row * src_rs + column].

fn run(i: u32) {
    let per = 32u / ${BITS}u;
    var w = 0u;
    for (var k = 0u; k < per; k++) {
        let e = i * per + k;
        if (e >= P.elems) {
            break;
        }
        let v = buf[P.src_off + (e / P.width) * P.src_rs + e % P.width];
        w |= (v & ((1u << ${BITS}u) - 1u)) << (k * ${BITS}u);
    }
    buf[P.dst_off + i] = w;
}
