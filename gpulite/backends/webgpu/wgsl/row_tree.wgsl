// Rows along the last axis shared by cooperating threads: `//#include "row_tree.wgsl"` in a
// run_group kernel whose Params have rows, depth, cols and split (cols * split = $WG threads
// of the workgroup; split a power of two). Thread t works on row `row_of(g, t)` and folds its
// elements part, part + split, ... (neighbouring threads read neighbouring words); the
// row_sum / row_max trees give every thread of the row its total. Call them from every
// thread of the workgroup (they hold barriers), live row or not.

var<workgroup> row_acc: array<f32, $WG>;

fn row_of(g: u32, t: u32) -> u32 {
    return g * P.cols + t / P.split;
}

fn row_part(t: u32) -> u32 {
    return t % P.split;
}

// The tree of both: workgroup-memory steps while partners are a subgroup or more apart, then
// shuffles (program.py's subgroups; the same pairs, so the same values); the row's first
// thread then hands the total to the others through row_acc.
fn row_fold(t: u32, v: f32, is_max: bool) -> f32 {
    let part = row_part(t);
    var acc = v;
    row_acc[t] = acc;
    workgroupBarrier();
    var s = P.split / 2u;
    for (; s > 0u; s = s / 2u) {
        if (s < subgroup_width) {
            break;
        }
        if (part < s) {
            acc = select(acc + row_acc[t + s], max(acc, row_acc[t + s]), is_max);
            row_acc[t] = acc;
        }
        workgroupBarrier();
    }
    for (; s > 0u; s = s / 2u) {
        let w = sg_xor_f32(acc, s);
        acc = select(acc + w, max(acc, w), is_max);
    }
    if (part == 0u) {
        row_acc[t] = acc;
    }
    workgroupBarrier();
    let total = row_acc[t - part];
    workgroupBarrier();  // row_acc is free again for the next tree
    return total;
}

fn row_sum(t: u32, v: f32) -> f32 {
    return row_fold(t, v, false);
}

fn row_max(t: u32, v: f32) -> f32 {
    return row_fold(t, v, true);
}

// The row's largest input (-inf for an empty or dead row): `start` is the row's first word in
// buf. Every thread of the workgroup calls it (row_max holds barriers).
fn row_input_max(t: u32, live: bool, start: u32) -> f32 {
    var m = bitcast<f32>(0xff800000u);  // -inf
    if (live) {
        for (var k = row_part(t); k < P.depth; k += P.split) {
            m = max(m, buf[start + k]);
        }
    }
    return row_max(t, m);
}
