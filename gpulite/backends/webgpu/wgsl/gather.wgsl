// Index map of GATHER: params viewed as [batch, outer, axis_n, inner], indices as [batch,
// n_idx] $IW-word integers (int32, or int64 read by its low word); output [batch, outer, n_idx,
// inner] (batch is 1 without batch_dims). An index outside [0, axis_n) is clamped (TFLite
// fails the invoke; a shader cannot).

const NONE: u32 = 0xffffffffu;

fn src(e: u32) -> u32 {
    let k = e % P.inner;
    var r = e / P.inner;
    let j = r % P.n_idx;
    r = r / P.n_idx;
    let o = r % P.outer;
    let b = r / P.outer;
    let w = P.idx_off + (b * P.n_idx + j) * ${IW}u;
    var idx = i32(buf[w]);
    if (${IW}u == 2u && buf[w + 1u] != 0u) {
        idx = select(i32(P.axis_n), -1, i32(buf[w + 1u]) < 0);
    }
    let a = u32(clamp(idx, 0, i32(P.axis_n) - 1));
    return ((b * P.outer + o) * P.axis_n + a) * P.inner + k;
}
