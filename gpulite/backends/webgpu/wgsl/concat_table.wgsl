// The input table of a gathered CONCATENATION (concat_gather.wgsl, qconcat.wgsl):
// `//#include "concat_table.wgsl"`. Both tensors viewed as [outer, columns] (P.row output
// columns); P.table lists P.n_in entries of `width` words, each starting with the input's first
// output column, its column count and its element offset in the arena.

// The table entry (its first word) of the input that holds output column k.
fn concat_entry(k: u32, width: u32) -> u32 {
    var j = 0u;
    while (j + 1u < P.n_in && k >= buf[P.table + (j + 1u) * width]) {
        j++;
    }
    return P.table + j * width;
}

// The element (in the arena) that output element e copies from its input, t its entry.
fn concat_source(e: u32, t: u32) -> u32 {
    return buf[t + 2u] + (e / P.row) * buf[t + 1u] + (e % P.row - buf[t]);
}
