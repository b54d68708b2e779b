// An integer unary op as a table of codes (kernels/code_table.py): output element e is the table
// entry at input element e's bits, read from the tail table (P.tail entries further) for
// e >= P.body. Input and output codes are packed $IN_PER / $OUT_PER to a u32 word, little end
// first, and so is the table (output codes); one thread builds a whole output word.
// A code whose rank from the dtype's least (its bits ^ P.flip) is below P.least_rank lies outside
// the op's domain: the thread adds how many of its codes do to abuf[P.check_off] and raises
// abuf[P.check_off + 1] to how far below the least one lies (P.least_rank 0: none can).

fn in_bits(e: u32) -> u32 {
    return (buf[P.x_off + e / ${IN_PER}u] >> ((e % ${IN_PER}u) * ${IN_BITS}u)) & ((1u << ${IN_BITS}u) - 1u);
}

fn table_code(k: u32) -> u32 {
    return (buf[P.t_off + k / ${OUT_PER}u] >> ((k % ${OUT_PER}u) * ${OUT_BITS}u)) & ((1u << ${OUT_BITS}u) - 1u);
}

fn run(i: u32) {
    var w = 0u;
    var below = 0u;
    var depth = 0u;
    for (var k = 0u; k < ${OUT_PER}u; k++) {
        let e = i * ${OUT_PER}u + k;
        if (e >= P.elems) {
            break;
        }
        let b = in_bits(e);
        let rank = b ^ P.flip;
        if (rank < P.least_rank) {
            below += 1u;
            depth = max(depth, P.least_rank - rank);
        }
        w |= table_code(b + select(0u, P.tail, e >= P.body)) << (k * ${OUT_BITS}u);
    }
    buf[P.out_off + i] = w;
    if (below > 0u) {
        atomicAdd(&abuf[P.check_off], below);
        atomicMax(&abuf[P.check_off + 1u], depth);
    }
}
