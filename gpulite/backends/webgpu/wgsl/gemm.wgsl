// Tiled matrix product, the core of CONV_2D, FULLY_CONNECTED and BATCH_MATMUL (kernels/gemm.py):
// C[b] = A[b] (P.m x P.k) * B[b] (P.k x P.n_cols), for b < P.batches.
//
// A workgroup of 64 x $KG threads computes one 32 x 32 tile of C: its 64 threads are 8 x 8,
// each owning 4 rows x 4 columns (one vec4 per row). K is walked 16 at a time through
// workgroup memory: per step each thread loads two vec4s of A (4 consecutive k of a row) and
// two of B (4 consecutive columns of a k), then reads 8 vec4s from workgroup memory per 64
// multiply-adds. With $KG = 4 (few tiles, long K) the workgroup's four groups of 64 threads
// take every fourth K step each and their sums meet in workgroup memory at the end: four times
// the threads in flight in one dispatch. A grid of P.splits slices of K (P.k_tiles steps each)
// writes partial sums to P.part_off, summed by gemm_sum.wgsl. No thread sums more than
// P.k_tiles * 16 / $KG products per output (kernels/gemm.py keeps that <= 1024).
//
// The file before this one defines, for batch b:
//   fn mm_a(b: u32, row: u32, k: u32) -> vec4<f32>   A[row][k .. k+3] (zero past P.m or P.k)
//   fn mm_b(b: u32, k: u32, col: u32) -> vec4<f32>   B[k][col .. col+3] (zero past P.k or P.n_cols;
//                                                     k < P.kt_total * 16, col < tiles_n * 32)
//   fn mm_out(b: u32, row: u32, col: u32, acc: vec4<f32>)   C[row][col .. col+3] (row < P.m,
//                                                     col < P.n_cols; bias and epilogue there)

const KG: u32 = $KG;
var<workgroup> ta: array<vec4<f32>, $SLOTS>;  // per group: [32 rows][4 vec4s of k]
var<workgroup> tb: array<vec4<f32>, $SLOTS>;  // per group: [16 k][8 vec4s of columns]

// One 16-deep step of group g (offset o in the tiles) over k-tile kt.
fn load_step(b: u32, row0: u32, col0: u32, kt: u32, l: u32, o: u32) {
    let k0 = kt * 16u;
    for (var j = 0u; j < 128u; j += 64u) {
        let t = l + j;
        ta[o + t] = mm_a(b, row0 + t / 4u, k0 + (t % 4u) * 4u);
        tb[o + t] = mm_b(b, k0 + t / 8u, col0 + (t % 8u) * 4u);
    }
}

fn result(b: u32, row: u32, col: u32, split: u32, acc: vec4<f32>) {
    if (P.splits == 1u) {
        mm_out(b, row, col, acc);
    } else {  // partial sums [split][b][row][n_pad]
        buf4[(P.part_off + ((split * P.batches + b) * P.m + row) * P.n_pad + col) / 4u] = acc;
    }
}

fn run_group(wg: u32, lid: u32) {  // workgroup wg (< P.n, uniform), thread lid
    let tn = wg % P.tiles_n;
    var r = wg / P.tiles_n;
    let tm = r % P.tiles_m;
    r = r / P.tiles_m;
    let split = r % P.splits;
    let b = r / P.splits;
    let row0 = tm * 32u;
    let col0 = tn * 32u;
    let g = lid / 64u;
    let l = lid % 64u;
    let o = g * 128u;
    let tx = l % 8u;
    let ty = l / 8u;
    var acc: array<vec4<f32>, 4>;
    let kt0 = split * P.k_tiles;
    let kt1 = min(kt0 + P.k_tiles, P.kt_total);
    for (var kt = kt0; kt < kt1; kt += KG) {
        if (kt + g < kt1) {
            load_step(b, row0, col0, kt + g, l, o);
        } else {
            for (var j = 0u; j < 128u; j += 64u) {
                ta[o + l + j] = vec4<f32>();
                tb[o + l + j] = vec4<f32>();
            }
        }
        workgroupBarrier();
        for (var kv = 0u; kv < 4u; kv++) {
            let b0 = tb[o + kv * 32u + tx];
            let b1 = tb[o + kv * 32u + 8u + tx];
            let b2 = tb[o + kv * 32u + 16u + tx];
            let b3 = tb[o + kv * 32u + 24u + tx];
            for (var i = 0u; i < 4u; i++) {
                let a = ta[o + (ty * 4u + i) * 4u + kv];
                acc[i] += a.x * b0 + a.y * b1 + a.z * b2 + a.w * b3;
            }
        }
        workgroupBarrier();
    }
    if (KG > 1u) {  // groups 1.. hand their sums to group 0 through the (now free) tiles
        if (g > 0u) {
            for (var i = 0u; i < 4u; i++) {
                let s = (g - 1u) * 256u + l * 4u + i;
                if (s < 128u * KG) { ta[s] = acc[i]; } else { tb[s - 128u * KG] = acc[i]; }
            }
        }
        workgroupBarrier();
        if (g > 0u) {
            return;
        }
        for (var h = 0u; h + 1u < KG; h++) {
            for (var i = 0u; i < 4u; i++) {
                let s = h * 256u + l * 4u + i;
                if (s < 128u * KG) { acc[i] += ta[s]; } else { acc[i] += tb[s - 128u * KG]; }
            }
        }
    }
    let col = col0 + tx * 4u;
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + ty * 4u + i;
        if (row < P.m && col < P.n_cols) {
            result(b, row, col, split, acc[i]);
        }
    }
}
