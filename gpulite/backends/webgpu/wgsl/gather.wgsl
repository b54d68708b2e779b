// Index map of GATHER: params viewed as [outer, axis_n, inner], indices as $IW-word integers
// (int32, or int64 read by its low word); output [outer, n_idx, inner]. An index outside
// [0, axis_n) is clamped (TFLite fails the invoke; a shader cannot).

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let k = e % P.inner;
    var r = e / P.inner;
    let j = r % P.n_idx;
    let o = r / P.n_idx;
    var idx = i32(buf[P.idx_off + j * ${IW}u]);
    if (${IW}u == 2u && buf[P.idx_off + j * 2u + 1u] != 0u) {
        idx = select(i32(P.axis_n), -1, i32(buf[P.idx_off + j * 2u + 1u]) < 0);
    }
    let a = u32(clamp(idx, 0, i32(P.axis_n) - 1));
    return (o * P.axis_n + a) * P.inner + k;
}
