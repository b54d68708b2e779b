// ARG_MAX / ARG_MIN over the middle axis of [outer, r, inner], as cooperating workgroups of
// $WG threads: P.cols outputs a workgroup, P.split threads an output (lanes along the
// outputs when inner > 1, whose neighbours are neighbouring words, else along the axis).
// A thread keeps the first extreme of its elements, the partials meet in a workgroup-memory
// tree (its steps within a subgroup as shuffles, program.py) where an equal value keeps the
// lower index: the first extreme wins, as TFLite's strict comparison. NaN is never an extreme, as in LiteRT (a row of NaN only gives 0).
// Values load as $T through `load` (bit casts of u32 words, or bytes for 8-bit inputs); the
// index is written as one word (int32) or as two, low word first (int64: WGSL has no i64).

var<workgroup> best_v: array<$T, $WG>;
var<workgroup> best_at: array<u32, $WG>;

fn load(e: u32) -> $T {
    return $LOAD;
}

fn is_nan(v: $T) -> bool {
    return $ISNAN;
}

fn wins(v: $T, at: u32, b: $T, b_at: u32) -> bool {
    return v $CMP b || (v == b && at < b_at);
}

fn run_group(g: u32, t: u32) {
    var col = t / P.split;
    var part = t % P.split;
    var step = 1u;
    if (P.lanes_on_cols == 1u) {
        col = t % P.cols;
        part = t / P.cols;
        step = P.cols;
    }
    let i = g * P.cols + col;
    let live = i < P.outs;
    let first = (i / P.inner) * P.r * P.inner + i % P.inner;
    var best: $T;  // no value yet: at = none loses to every candidate
    var at = 0xffffffffu;
    if (live) {
        for (var j = part; j < P.r; j += P.split) {
            let v = load(first + j * P.inner);
            if (!is_nan(v) && (at == 0xffffffffu || v $CMP best)) {
                best = v;
                at = j;
            }
        }
    }
    best_v[t] = best;
    best_at[t] = at;
    workgroupBarrier();
    var s = P.split / 2u;
    for (; s > 0u; s = s / 2u) {
        if (s * step < subgroup_width) {
            break;  // partners within a subgroup from here: shuffles
        }
        if (part < s) {
            let o = t + s * step;
            if (best_at[o] != 0xffffffffu && (at == 0xffffffffu || wins(best_v[o], best_at[o], best, at))) {
                best = best_v[o];
                at = best_at[o];
                best_v[t] = best;
                best_at[t] = at;
            }
        }
        workgroupBarrier();
    }
    for (; s > 0u; s = s / 2u) {
        let ov = sg_xor_$T(best, s * step);
        let o_at = sg_xor_u32(at, s * step);
        if (o_at != 0xffffffffu && (at == 0xffffffffu || wins(ov, o_at, best, at))) {
            best = ov;
            at = o_at;
        }
    }
    if (part == 0u && live) {
        if (at == 0xffffffffu) {
            at = 0u;
        }
        buf[P.out_off + i * ${OW}u] = at;
        if (${OW}u == 2u) {
            buf[P.out_off + i * 2u + 1u] = 0u;
        }
    }
}
