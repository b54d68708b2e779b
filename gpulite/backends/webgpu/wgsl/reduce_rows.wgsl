// MEAN, SUM, REDUCE_MAX / MIN / PROD and global pools as cooperating workgroups of 256
// threads. Output o's inputs: the kept dims (P.kshape / P.kstride, merged to 4) locate its
// first element, the reduced dims (P.rshape / P.rstride) the P.count it folds. A workgroup
// takes P.cols consecutive outputs with P.split threads each (cols * split = 256); thread
// t's lane in the group is its column (P.lanes_on_cols = 1: neighbouring threads read
// neighbouring kept elements, e.g. channels of a global pool) or its part (0: neighbouring
// reduced elements, a row along the last axis). P.chunks workgroups may share a block of
// outputs: each folds every (chunks * split)-th element from its own start, the partials
// meet in a workgroup-memory tree, and with chunks > 1 the group writes a raw partial to
// out[o * chunks + chunk] for a second dispatch (this kernel again, chunks = 1) to fold.
// With $CODES (4 or 2) the outputs are narrow integer codes, packed into whole words.
// With subgroups (program.py) the tree's steps between threads of one subgroup are
// shuffles: the same pairs in the same order, so the same values, with fewer barriers.
// $T is f32 or i32; $FINISH sees the folded value as acc (MEAN divides by P.total); $LOAD
// reads reduced element j of the output's row, which starts at element `base` (a plain word
// buf[P.x_off + base + offset of j], or a narrow code: qmath.wgsl's q_load_*; one multiply for the
// offset when the reduced dims merge into one).
//#include "coords.wgsl"

var<workgroup> part_acc: array<$T, 256>;

fn run_group(g: u32, t: u32) {
    let block = g / P.chunks;
    let chunk = g % P.chunks;
    var col = t / P.split;
    var part = t % P.split;
    var step = 1u;  // distance in part_acc between neighbouring parts of a column
    if (P.lanes_on_cols == 1u) {
        col = t % P.cols;
        part = t / P.cols;
        step = P.cols;
    }
    let o = block * P.cols + col;
    var acc = $INIT;
    if (o < P.outs) {
        let base = dot(coords4(o, P.kshape), P.kstride);
        let stride = P.chunks * P.split;
        for (var j = chunk * P.split + part; j < P.count; j += stride) {
            let v = $LOAD;
            acc = $REDUCE;
        }
    }
    part_acc[t] = acc;
    workgroupBarrier();
    var s = P.split / 2u;
    for (; s > 0u; s = s / 2u) {
        if (s * step < subgroup_width) {
            break;  // partners within a subgroup from here: shuffles, no barriers
        }
        if (part < s) {
            let v = part_acc[t + s * step];
            acc = $REDUCE;
            part_acc[t] = acc;
        }
        workgroupBarrier();
    }
    for (; s > 0u; s = s / 2u) {  // t ^ (s * step) is the same column's part ^ s: the same pairs
        let v = sg_xor_$T(acc, s * step);
        acc = $REDUCE;
    }
    if (${CODES}u == 0u) {
        if (part == 0u && o < P.outs) {
            if (P.chunks == 1u) {
                buf[P.out_off + o] = act($FINISH);
            } else {
                buf[P.out_off + o * P.chunks + chunk] = acc;
            }
        }
        return;
    }
    // Narrow integer codes, $CODES to a word (the integer kernels; P.chunks is 1 and P.cols a
    // multiple of $CODES): the group's outputs are whole words, which its first threads build
    // from the columns' results in part_acc.
    let per = max(${CODES}u, 1u);
    workgroupBarrier();
    if (part == 0u) {
        part_acc[col] = act($FINISH);
    }
    workgroupBarrier();
    let first = block * P.cols;
    if (t < P.cols / per && first + t * per < P.outs) {
        var w = 0u;
        for (var k = 0u; k < per && first + t * per + k < P.outs; k++) {
            w |= (bitcast<u32>(part_acc[t * per + k]) & ((1u << (32u / per)) - 1u)) << (k * (32u / per));
        }
        buf[P.out_off + first / per + t] = bitcast<$T>(w);
    }
}
