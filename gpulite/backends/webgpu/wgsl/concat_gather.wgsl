// Index map of CONCATENATION for elements narrower than a word (int8, float16, ...): both
// tensors viewed as [outer, columns]. Output column k belongs to the input whose columns
// [start, start + part) hold it; P.table lists (start, part, element offset in the arena) per
// input, so src returns absolute element indices (the driver's x_off is 0).
//#include "concat_table.wgsl"

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    return concat_source(e, concat_entry(e % P.row, 3u));
}
