// Landmarks2TransformMatrix v2 (MediaPipe), one thread: landmarks (1, N, 3) -> a 4x4 matrix
// mapping crop pixels to landmark space (see kernels/mediapipe_ops.py for the formula).
// MediaPipe computes in double with atan2/cos/sin; here the rotation's cosine and sine come
// from the left->right direction itself (cos(t - phi) = cos t * dx / r + sin t * dy / r, ...),
// with cos t and sin t of the target rotation computed on the host in double: only f32
// products, sums and one sqrt, so no transcendental function's accuracy (WGSL allows atan2 an
// error of 4096 ulp) enters the matrix.

fn lm_x(k: u32) -> f32 { return buf[P.lm_off + 3u * k]; }
fn lm_y(k: u32) -> f32 { return buf[P.lm_off + 3u * k + 1u]; }

fn run(i: u32) {
    let dx = lm_x(P.right) - lm_x(P.left);
    let dy = lm_y(P.right) - lm_y(P.left);
    let r = sqrt(dx * dx + dy * dy);
    // phi = atan2(dy, dx); atan2(+-0, +0) = +-0 and atan2(+-0, -0) = +-pi, as in C.
    var cos_phi = 1.0;
    var sin_phi = 0.0;
    if (r > 0.0) {
        cos_phi = dx / r;
        sin_phi = dy / r;
    } else if ((bitcast<u32>(dx) >> 31u) == 1u) {
        cos_phi = -1.0;
    }
    if (r != r) {  // NaN landmarks: NaN matrix, as atan2(NaN) gives on the CPU
        cos_phi = r;
        sin_phi = r;
    }
    // rotation = target - phi
    let c = P.cos_t * cos_phi + P.sin_t * sin_phi;
    let s = P.sin_t * cos_phi - P.cos_t * sin_phi;
    // Bounding box of the subset rotated by `rotation`: (c x - s y, s x + c y).
    var lo = vec2<f32>(0.0, 0.0);
    var hi = vec2<f32>(0.0, 0.0);
    for (var j = 0u; j < P.subset_n; j++) {
        let k = u32(buf[P.subset_off + j]);  // indices stored as exact f32 values
        let x = lm_x(k);
        let y = lm_y(k);
        let p = vec2<f32>(c * x - s * y, s * x + c * y);
        if (j == 0u) {
            lo = p;
            hi = p;
        } else {
            lo = min(lo, p);
            hi = max(hi, p);
        }
    }
    let size = hi - lo;
    let mid = (lo + hi) * 0.5;
    // The centre rotated back by -rotation: R(rotation)^T mid.
    let centre = vec2<f32>(c * mid.x + s * mid.y, c * mid.y - s * mid.x);
    // Linear part R(-rotation) S(k), k = scale * size / output size; offset centre - lin @ half.
    let k = P.rel_scale.xy * size;
    let l00 = c * k.x;
    let l01 = s * k.y;
    let l10 = -s * k.x;
    let l11 = c * k.y;
    let o = P.out_off;
    buf[o + 0u] = l00;
    buf[o + 1u] = l01;
    buf[o + 2u] = 0.0;
    buf[o + 3u] = centre.x - (l00 * P.half.x + l01 * P.half.y);
    buf[o + 4u] = l10;
    buf[o + 5u] = l11;
    buf[o + 6u] = 0.0;
    buf[o + 7u] = centre.y - (l10 * P.half.x + l11 * P.half.y);
    buf[o + 8u] = 0.0;
    buf[o + 9u] = 0.0;
    buf[o + 10u] = 1.0;
    buf[o + 11u] = 0.0;
    buf[o + 12u] = 0.0;
    buf[o + 13u] = 0.0;
    buf[o + 14u] = 0.0;
    buf[o + 15u] = 1.0;
}
