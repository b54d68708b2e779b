// TOPK_V2 over the last axis (P.len values a row): one thread per input element counts the
// elements of its row that come before it (a greater value; an equal value at a lower index;
// NaN after every number, NaNs in index order: the cpu kernel's stable sort) and, when that
// rank is below P.k, writes the element and its index at that rank of the row's outputs.
// Values move as u32 words; the index is one word (int32) or two, low word first (int64).

fn val(e: u32) -> $T {
    return bitcast<$T>(buf[P.x_off + e]);
}

fn is_nan(v: $T) -> bool {
    return $ISNAN;
}

fn before(a: $T, ia: u32, b: $T, ib: u32) -> bool {
    if (is_nan(a)) {
        return is_nan(b) && ia < ib;
    }
    return is_nan(b) || a > b || (a == b && ia < ib);
}

fn run(i: u32) {
    let row = i / P.len;
    let j = i % P.len;
    let base = row * P.len;
    let v = val(i);
    var rank = 0u;
    for (var m = 0u; m < P.len && rank < P.k; m++) {
        if (before(val(base + m), m, v, j)) {
            rank++;
        }
    }
    if (rank < P.k) {
        let o = row * P.k + rank;
        buf[P.v_off + o] = buf[P.x_off + i];
        buf[P.i_off + o * ${IW}u] = j;
        if (${IW}u == 2u) {
            buf[P.i_off + o * 2u + 1u] = 0u;
        }
    }
}
