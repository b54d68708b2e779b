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

fn row_sum(t: u32, v: f32) -> f32 {
    let part = row_part(t);
    row_acc[t] = v;
    workgroupBarrier();
    for (var s = P.split / 2u; s > 0u; s = s / 2u) {
        if (part < s) {
            row_acc[t] = row_acc[t] + row_acc[t + s];
        }
        workgroupBarrier();
    }
    let total = row_acc[t - part];
    workgroupBarrier();  // row_acc is free again for the next tree
    return total;
}

fn row_max(t: u32, v: f32) -> f32 {
    let part = row_part(t);
    row_acc[t] = v;
    workgroupBarrier();
    for (var s = P.split / 2u; s > 0u; s = s / 2u) {
        if (part < s) {
            row_acc[t] = max(row_acc[t], row_acc[t + s]);
        }
        workgroupBarrier();
    }
    let total = row_acc[t - part];
    workgroupBarrier();
    return total;
}
