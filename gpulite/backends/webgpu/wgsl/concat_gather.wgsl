// Index map of CONCATENATION for elements narrower than a word (int8, float16, ...): both
// tensors viewed as [outer, columns]. Output column k belongs to the input whose columns
// [start, start + part) hold it; P.table lists (start, part, element offset in the arena) per
// input, so src returns absolute element indices (the driver's x_off is 0).

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let o = e / P.row;
    let k = e % P.row;
    var j = 0u;
    while (j + 1u < P.n_in && k >= buf[P.table + (j + 1u) * 3u]) {
        j++;
    }
    let t = P.table + j * 3u;
    return buf[t + 2u] + o * buf[t + 1u] + (k - buf[t]);
}
