// Tiled matrix product, the core of CONV_2D, FULLY_CONNECTED and BATCH_MATMUL (kernels/gemm.py):
// C[b] = A[b] (P.m x P.k) * B[b] (P.k x P.n_cols), for b < P.batches.
//
// A workgroup of 64 x $KG threads computes one tile of C, 8 * $RPT rows x 32 columns: its 64
// threads are 8 x 8, each owning $RPT rows x 4 columns (one vec4 per row; $RPT is 4, or 1 for
// products too small to fill the GPU with 32-row tiles). K is walked 16 at a time through
// workgroup memory: per step the threads load the tile's A (8 * $RPT rows x 4 vec4s of k) and
// B (16 k x 8 vec4s of columns), then each reads 4 + $RPT vec4s from workgroup memory per
// 16 * $RPT multiply-adds. With $KG = 4 (few tiles, long K) the workgroup's four groups of 64 threads
// take every fourth K step each and their sums meet in workgroup memory at the end: four times
// the threads in flight in one dispatch. A grid of P.splits slices of K (P.k_tiles steps each)
// writes partial sums to P.part_off, summed by gemm_sum.wgsl. No thread sums more than
// P.k_tiles * 16 / $KG products per output (kernels/gemm.py keeps that <= 1024).
//
// The tiles hold $MT: f32, or f16 in fp16 plans (f16 math, kernels/gemm.py): A and B are rounded
// to f16 as they enter workgroup memory, each product is computed in f16 and added to the f32
// accumulator (summing four products in f16 first measured 5x the error on pose_landmark_lite's
// landmarks). f16 plans have $KG = 1 (the hand-over below moves f32 sums through the tiles).
//
// The file before this one defines, for batch b:
//   fn mm_a(b: u32, row: u32, k: u32) -> vec4<f32>   A[row][k .. k+3] (zero past P.m or P.k)
//   fn mm_b(b: u32, k: u32, col: u32) -> vec4<f32>   B[k][col .. col+3] (zero past P.k or P.n_cols;
//                                                     any k < P.kt_total * 16, col < P.n_pad)
//   fn mm_out(b: u32, row: u32, col: u32, acc: vec4<f32>)   C[row][col .. col+3] (row < P.m,
//                                                     col < P.n_cols; bias and epilogue there)

const KG: u32 = $KG;
const RPT: u32 = $RPT;  // rows per thread
const TA: u32 = 32u * RPT;  // vec4s of A per group and step: 8 * RPT rows x 4
const SA: u32 = $SLOTS_A;  // TA * KG
const SB: u32 = $SLOTS_B;  // 128 * KG
var<workgroup> ta: array<vec4<$MT>, $SLOTS_A>;  // per group: [8 * RPT rows][4 vec4s of k]
var<workgroup> tb: array<vec4<$MT>, $SLOTS_B>;  // per group: [16 k][8 vec4s of columns]

// One 16-deep step of group g (offsets oa, ob in the tiles) over k-tile kt.
fn load_step(b: u32, row0: u32, col0: u32, kt: u32, l: u32, oa: u32, ob: u32) {
    let k0 = kt * 16u;
    for (var t = l; t < TA; t += 64u) {
        ta[oa + t] = vec4<$MT>(mm_a(b, row0 + t / 4u, k0 + (t % 4u) * 4u));
    }
    for (var t = l; t < 128u; t += 64u) {
        tb[ob + t] = vec4<$MT>(mm_b(b, k0 + t / 8u, col0 + (t % 8u) * 4u));
    }
}

fn result(b: u32, row: u32, col: u32, split: u32, acc: vec4<f32>) {
    if (P.splits == 1u) {
        mm_out(b, row, col, acc);
    } else {  // partial sums [split][b][row][n_pad]
        buf4[(P.part_off + ((split * P.batches + b) * P.m + row) * P.n_pad + col) / 4u] = acc;
    }
}

// Slot s of the groups' hand-over (ta, then tb: both free once the last step is done).
fn hand(s: u32, v: vec4<f32>) {
    if (s < SA) { ta[s] = vec4<$MT>(v); } else { tb[s - SA] = vec4<$MT>(v); }
}

fn handed(s: u32) -> vec4<f32> {
    if (s < SA) { return vec4<f32>(ta[s]); }
    return vec4<f32>(tb[s - SA]);
}

fn run_group(wg: u32, lid: u32) {  // workgroup wg (< P.n, uniform), thread lid
    let tn = wg % P.tiles_n;
    var r = wg / P.tiles_n;
    let tm = r % P.tiles_m;
    r = r / P.tiles_m;
    let split = r % P.splits;
    let b = r / P.splits;
    let row0 = tm * 8u * RPT;
    let col0 = tn * 32u;
    let g = lid / 64u;
    let l = lid % 64u;
    let oa = g * TA;
    let ob = g * 128u;
    let tx = l % 8u;
    let ty = l / 8u;
    var acc: array<vec4<f32>, $RPT>;
    let kt0 = split * P.k_tiles;
    let kt1 = min(kt0 + P.k_tiles, P.kt_total);
    for (var kt = kt0; kt < kt1; kt += KG) {
        if (kt + g < kt1) {
            load_step(b, row0, col0, kt + g, l, oa, ob);
        } else {
            for (var t = l; t < TA; t += 64u) {
                ta[oa + t] = vec4<$MT>();
            }
            for (var t = l; t < 128u; t += 64u) {
                tb[ob + t] = vec4<$MT>();
            }
        }
        workgroupBarrier();
        for (var kv = 0u; kv < 4u; kv++) {
            let b0 = tb[ob + kv * 32u + tx];
            let b1 = tb[ob + kv * 32u + 8u + tx];
            let b2 = tb[ob + kv * 32u + 16u + tx];
            let b3 = tb[ob + kv * 32u + 24u + tx];
            for (var i = 0u; i < RPT; i++) {
                let a = ta[oa + (ty * RPT + i) * 4u + kv];
                acc[i] += vec4<f32>(a.x * b0) + vec4<f32>(a.y * b1) + vec4<f32>(a.z * b2) + vec4<f32>(a.w * b3);
            }
        }
        workgroupBarrier();
    }
    if (KG > 1u) {  // groups 1.. hand their sums to group 0 through the (now free) tiles
        if (g > 0u) {
            for (var i = 0u; i < RPT; i++) {
                hand(((g - 1u) * 64u + l) * RPT + i, acc[i]);
            }
        }
        workgroupBarrier();
        if (g > 0u) {
            return;
        }
        for (var h = 0u; h + 1u < KG; h++) {
            for (var i = 0u; i < RPT; i++) {
                acc[i] += handed((h * 64u + l) * RPT + i);
            }
        }
    }
    let col = col0 + tx * 4u;
    for (var i = 0u; i < RPT; i++) {
        let row = row0 + ty * RPT + i;
        if (row < P.m && col < P.n_cols) {
            result(b, row, col, split, acc[i]);
        }
    }
}
