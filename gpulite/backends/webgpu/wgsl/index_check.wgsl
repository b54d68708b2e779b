// The index check of a gather, as one workgroup of $WG threads (index_check.py): P.rows rows
// of P.k indices ($IW-word integers: int32, or int64 as two words, low first), index j of a
// row valid in [0, bound j) (P.k u32 words at P.bounds_off). Indices are compared as 64-bit
// values (a signed high word, an unsigned low word). Writes at P.err_off: the first row with
// an index out of range (or NONE), 0, the least and the greatest index (low, high words);
// then that row's raw words. The kernel reading the indices clamps them regardless; the
// executable reads these words after the invoke and raises.

const NONE: u32 = 0xffffffffu;

var<workgroup> s_first: array<u32, $WG>;
var<workgroup> s_lo: array<vec2<u32>, $WG>;  // (low word, high word) of the least index
var<workgroup> s_hi: array<vec2<u32>, $WG>;

fn index_at(e: u32) -> vec2<u32> {
    let w = P.idx_off + e * ${IW}u;
    if (${IW}u == 2u) {
        return vec2<u32>(buf[w], buf[w + 1u]);
    }
    return vec2<u32>(buf[w], select(0u, NONE, bitcast<i32>(buf[w]) < 0));
}

fn less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x);
}

fn run_group(g: u32, t: u32) {
    var first = NONE;
    var lo = vec2<u32>(NONE, 0x7fffffffu);
    var hi = vec2<u32>(0u, 0x80000000u);
    for (var r = t; r < P.rows; r += ${WG}u) {
        var bad = false;
        for (var j = 0u; j < P.k; j++) {
            let v = index_at(r * P.k + j);
            lo = select(lo, v, less(v, lo));
            hi = select(hi, v, less(hi, v));
            bad = bad || v.y != 0u || v.x >= buf[P.bounds_off + j];
        }
        if (bad && first == NONE) {  // rows rise along a thread's loop: its first is its least
            first = r;
        }
    }
    s_first[t] = first;
    s_lo[t] = lo;
    s_hi[t] = hi;
    workgroupBarrier();
    for (var s = ${WG}u / 2u; s > 0u; s = s / 2u) {
        if (t < s) {
            s_first[t] = min(s_first[t], s_first[t + s]);
            s_lo[t] = select(s_lo[t], s_lo[t + s], less(s_lo[t + s], s_lo[t]));
            s_hi[t] = select(s_hi[t], s_hi[t + s], less(s_hi[t], s_hi[t + s]));
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        let f = s_first[0];
        buf[P.err_off] = f;
        buf[P.err_off + 1u] = 0u;
        buf[P.err_off + 2u] = s_lo[0].x;
        buf[P.err_off + 3u] = s_lo[0].y;
        buf[P.err_off + 4u] = s_hi[0].x;
        buf[P.err_off + 5u] = s_hi[0].y;
        if (f != NONE) {
            for (var j = 0u; j < P.k * ${IW}u; j++) {
                buf[P.err_off + 6u + j] = buf[P.idx_off + f * P.k * ${IW}u + j];
            }
        }
    }
}
