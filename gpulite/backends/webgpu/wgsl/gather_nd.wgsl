// Index map of GATHER_ND with run-time indices ($IW-word integers: int32, or int64 by its low
// word and sign): output row r (P.inner elements) copies the params row at sum over j of
// idx[r, j] * stride j (P.k strides and dims as u32 words at P.strides_off, P.dims_off). An
// index is clamped to its dim; index_check.wgsl has flagged it for the invoke to fail.

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let r = e / P.inner;
    var off = e % P.inner;
    for (var j = 0u; j < P.k; j++) {
        let w = P.idx_off + (r * P.k + j) * ${IW}u;
        var v = bitcast<i32>(buf[w]);
        if (${IW}u == 2u && buf[w + 1u] != select(0u, NONE, v < 0)) {
            v = select(2147483647, -1, bitcast<i32>(buf[w + 1u]) < 0);
        }
        off += u32(clamp(v, 0, i32(buf[P.dims_off + j]) - 1)) * buf[P.strides_off + j];
    }
    return off;
}
