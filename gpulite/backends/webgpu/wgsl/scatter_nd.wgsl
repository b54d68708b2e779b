// SCATTER_ND (scatter.py): output element e is the sum, in index order, of the update elements
// that land on it, zero where none does. Output slot e / P.slice (its lane e % P.slice) takes
// update row r where the slot its P.k int32 indices name (index j clamped to its dim at
// P.dims_off, times the slot stride at P.strides_off) is that slot: LiteRT adds the rows in this
// order from zeros, so duplicates round alike. One dispatch scans rows P.row0 .. P.row1 - 1 and
// carries on from the output the previous dispatch left (from zero when P.row0 is 0): the same
// left-to-right sum however the rows are split. Out-of-range indices are flagged by
// index_check.wgsl and fail the invoke; clamped here, they only pick some slot in the meantime.

fn run(e: u32) {
    let slot = e / P.slice;
    let lane = e % P.slice;
    var acc = $ZERO;
    if (P.row0 > 0u) {
        acc = bitcast<$T>(buf[P.out_off + e]);
    }
    for (var r = P.row0; r < P.row1; r++) {
        var s = 0u;
        for (var j = 0u; j < P.k; j++) {
            let v = bitcast<i32>(buf[P.idx_off + r * P.k + j]);
            s += u32(clamp(v, 0, i32(buf[P.dims_off + j]) - 1)) * buf[P.strides_off + j];
        }
        if (s == slot) {
            acc = acc + bitcast<$T>(buf[P.upd_off + r * P.slice + lane]);
        }
    }
    buf[P.out_off + e] = bitcast<u32>(acc);
}
