// ARG_MAX / ARG_MIN over the middle axis of [outer, r, inner]: one output per thread. The
// first extreme wins, as TFLite's strict comparison (a later equal value does not replace it).
// Values load as $T through `load` (bit casts of u32 words, or bytes for 8-bit inputs); the
// index is written as one word (int32) or as two, low word first (int64: WGSL has no i64).

fn load(e: u32) -> $T {
    return $LOAD;
}

fn run(i: u32) {
    let o = i / P.inner;
    let k = i % P.inner;
    var p = o * P.r * P.inner + k;
    var best = load(p);
    var at = 0u;
    for (var j = 1u; j < P.r; j++) {
        p += P.inner;
        let v = load(p);
        if (v $CMP best) {
            best = v;
            at = j;
        }
    }
    buf[P.out_off + i * ${OW}u] = at;
    if (${OW}u == 2u) {
        buf[P.out_off + i * 2u + 1u] = 0u;
    }
}
