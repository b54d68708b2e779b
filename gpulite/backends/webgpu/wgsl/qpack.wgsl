// Integer codes computed one per i32 word (at P.src_off, e.g. by a reduction) packed into a
// narrow output through qwords.wgsl.

fn out_code(e: u32) -> i32 {
    return bitcast<i32>(buf[P.src_off + e]);
}
