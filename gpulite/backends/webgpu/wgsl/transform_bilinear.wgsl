// TransformTensorBilinear v2 (MediaPipe), one output element per thread: output pixel (x, y)
// samples the (1, H, W, C) input at (row0 . (x, y, 0, 1), row1 . (x, y, 0, 1)) of the 4x4
// matrix, whose offsets get MediaPipe's half-pixel correction row[3] += 0.5 row[0] +
// 0.5 row[1] - 0.5. Dot products in float32 term by term in MediaPipe's order, so the
// in/out-of-range decisions at the edges fall the same way. Outside [0, W-1] x [0, H-1]: 0;
// a corner past the last row/column reads 0 (with weight 0 when exactly on the edge).
// P.zero is 0.0 from the uniforms: the z term m2 * 0 must stay in (NaN for a non-finite m2),
// and a literal 0.0 would let the compiler fold it away.

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;  // integer test: survives fast math
}

fn read(y: u32, x: u32, c: u32) -> f32 {
    if (y >= P.in_h || x >= P.in_w) {
        return 0.0;
    }
    return buf[P.x_off + (y * P.in_w + x) * P.c + c];
}

// --- the half-pixel correction, rounded as MediaPipe's double arithmetic rounds it ---------
// MediaPipe computes r3 + (r0 * 0.5 + r1 * 0.5 - 0.5) in double and stores it to float: the
// float nearest the exact sum. A chain of f32 additions rounds up to three times and differs
// in 1 ulp for ~5% of random matrices, which moves every sample of the row (and can flip an
// edge decision). So the four terms are summed exactly in 64-bit fixed point (vec2<u32>
// lo/hi, two's complement) and rounded once, to nearest even: integer operations only, which
// no compiler reassociates. G fraction bits below the largest term's last bit keep every
// term within 2^36 of the largest exact; a term further below only breaks ties (its sign as
// one unit in the last place), which is where double would round the same way.
const G = 36u;

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn shl64(m: u32, s: u32) -> vec2<u32> {  // s < 64; shifts by >= 32 are avoided (WGSL masks them)
    if (s == 0u) { return vec2<u32>(m, 0u); }
    if (s >= 32u) { return vec2<u32>(0u, m << (s - 32u)); }
    return vec2<u32>(m << s, m >> (32u - s));
}

fn shr64(a: vec2<u32>, k: u32) -> vec2<u32> {  // 0 < k < 64
    if (k >= 32u) { return vec2<u32>(a.y >> (k - 32u), 0u); }
    return vec2<u32>((a.x >> k) | (a.y << (32u - k)), a.y >> k);
}

fn gt64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y > b.y || (a.y == b.y && a.x > b.x);
}

fn exact_sum4(t: vec4<f32>) -> f32 {
    var e = vec4<u32>(0u);
    var m = vec4<u32>(0u);
    var emax = 0u;
    for (var j = 0u; j < 4u; j++) {
        let b = bitcast<u32>(t[j]);
        let ex = (b >> 23u) & 0xffu;
        if (ex == 0xffu) { return t.x + (t.y + t.z + t.w); }  // inf / NaN: no exact sum to take
        m[j] = select((b & 0x7fffffu) | 0x800000u, b & 0x7fffffu, ex == 0u);
        e[j] = max(ex, 1u);  // subnormals share the smallest normal exponent
        if (m[j] != 0u) { emax = max(emax, e[j]); }
    }
    var s = vec2<u32>(0u, 0u);
    for (var j = 0u; j < 4u; j++) {
        if (m[j] == 0u) { continue; }
        let gap = emax - e[j];
        var v = vec2<u32>(1u, 0u);
        if (gap <= G) { v = shl64(m[j], G - gap); }
        if ((bitcast<u32>(t[j]) >> 31u) == 1u) { v = add64(~v, vec2<u32>(1u, 0u)); }
        s = add64(s, v);
    }
    let neg = (s.y >> 31u) == 1u;
    if (neg) { s = add64(~s, vec2<u32>(1u, 0u)); }
    if (s.x == 0u && s.y == 0u) { return 0.0; }
    var p = 31u - countLeadingZeros(s.x);  // the leading bit
    if (s.y != 0u) { p = 63u - countLeadingZeros(s.y); }
    var q = 0u;
    var k = 0u;  // bits dropped
    if (p > 23u) {
        k = p - 23u;
        q = shr64(s, k).x;
        let rem = vec2<u32>(s.x & select(0xffffffffu, (1u << k) - 1u, k < 32u),
                            select(0u, s.y & ((1u << (k - 32u)) - 1u), k > 32u));
        let half = shl64(1u, k - 1u);
        if (gt64(rem, half) || (rem.x == half.x && rem.y == half.y && (q & 1u) == 1u)) { q += 1u; }
        if (q == 0x1000000u) {
            q = q >> 1u;
            k += 1u;
        }
    } else {
        q = s.x << (23u - p);
    }
    // value = q * 2^(emax + k - G - 150): biased exponent emax + k - G + (23 - p when p < 23).
    let eb = i32(emax + k) - i32(G) - i32(select(0u, 23u - p, p < 23u));
    if (eb <= 0 || eb >= 255) { return t.x + (t.y + t.z + t.w); }  // subnormal or overflowing
    return bitcast<f32>(select(0u, 0x80000000u, neg) | (u32(eb) << 23u) | (q & 0x7fffffu));
}

fn coord(m: u32, fx: f32, fy: f32) -> f32 {
    let r0 = buf[m];
    let r1 = buf[m + 1u];
    let r3 = exact_sum4(vec4<f32>(buf[m + 3u], r0 * 0.5, r1 * 0.5, -0.5));
    return r0 * fx + r1 * fy + buf[m + 2u] * P.zero + r3;
}

fn run(i: u32) {
    let c = i % P.c;
    let pix = i / P.c;
    let fx = f32(pix % P.out_w);
    let fy = f32(pix / P.out_w);
    let tx = coord(P.m_off, fx, fy);
    let ty = coord(P.m_off + 4u, fx, fy);
    // A NaN coordinate fails every comparison in the C++: it alone never makes a point
    // outside, and an otherwise inside point comes out NaN. (Tested on the bits, so a compiler
    // that assumes no NaNs cannot fold the comparisons.)
    let nan_x = is_nan(tx);
    let nan_y = is_nan(ty);
    let out_x = !nan_x && (tx < 0.0 || tx > f32(P.in_w - 1u));
    let out_y = !nan_y && (ty < 0.0 || ty > f32(P.in_h - 1u));
    if (out_x || out_y) {
        buf[P.out_off + i] = 0.0;
        return;
    }
    if (nan_x || nan_y) {
        buf[P.out_off + i] = bitcast<f32>(0x7fc00000u);
        return;
    }
    let x0 = floor(tx);
    let y0 = floor(ty);
    let right = tx - x0;
    let low = ty - y0;
    let ix = u32(x0);
    let iy = u32(y0);
    let upper = read(iy, ix, c) * (1.0 - right) + read(iy, ix + 1u, c) * right;
    let lower = read(iy + 1u, ix, c) * (1.0 - right) + read(iy + 1u, ix + 1u, c) * right;
    buf[P.out_off + i] = lower * low + upper * (1.0 - low);
}
