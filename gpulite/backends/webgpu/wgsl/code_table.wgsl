// An integer unary op as a table of codes (kernels/code_table.py): output element e is the table
// entry at input element e's bits, read from the tail table (P.tail entries further) for
// e >= P.body. Input and output codes are packed $IN_PER / $OUT_PER to a u32 word, little end
// first, and so is the table (output codes); one thread builds a whole output word.

fn in_bits(e: u32) -> u32 {
    return (buf[P.x_off + e / ${IN_PER}u] >> ((e % ${IN_PER}u) * ${IN_BITS}u)) & ((1u << ${IN_BITS}u) - 1u);
}

fn table_code(k: u32) -> u32 {
    return (buf[P.t_off + k / ${OUT_PER}u] >> ((k % ${OUT_PER}u) * ${OUT_BITS}u)) & ((1u << ${OUT_BITS}u) - 1u);
}

fn run(i: u32) {
    var w = 0u;
    for (var k = 0u; k < ${OUT_PER}u; k++) {
        let e = i * ${OUT_PER}u + k;
        if (e >= P.elems) {
            break;
        }
        w |= table_code(in_bits(e) + select(0u, P.tail, e >= P.body)) << (k * ${OUT_BITS}u);
    }
    buf[P.out_off + i] = w;
}
