// ln(s) of a float32 s in [1, 2^11] rounded to float32 as the CPU's float64 log then float32
// cast rounds it, in 64-bit fixed point (qmath.wgsl's vec2<u32> integers; no float rounding
// that a driver may change): s = m * 2^e with the 24-bit mantissa m = 1.k..., so
// ln(s) = e ln2 - ln(i_k) + ln(m i_k), i_k ~ 1 / (1 + (k + 1/2) / 128) from a table with
// -ln(i_k) to 2^-60, and ln(1 + u), |u| < 2^-8, by its series to u^6 (error < 2^-59) in Q62.
// The table at word `tab`: per k the 24-bit integer 2^24 i_k, then -ln(i_k) in Q60 (low, high
// words); after the 128 rows, ln 2 in Q60 (kernels/qsoftmax.py's LOG_TABLES). The result is within 2^-57 of ln(s), so it rounds as the
// exact value does except within 2^-57 of a midpoint between two float32s (ln s < 8: Q60 holds it).

fn neg64(a: vec2<u32>) -> vec2<u32> {
    return q_add64(~a, vec2<u32>(1u, 0u));
}

fn is_neg64(a: vec2<u32>) -> bool {
    return (a.y >> 31u) == 1u;
}

// (a * b) / 2^62 truncated, for signed a, b below 2^63 in magnitude.
fn mul_q62(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let ua = select(a, neg64(a), is_neg64(a));
    let ub = select(b, neg64(b), is_neg64(b));
    let ll = q_mulu_wide(ua.x, ub.x);
    let lh = q_mulu_wide(ua.x, ub.y);
    let hl = q_mulu_wide(ua.y, ub.x);
    let hh = q_mulu_wide(ua.y, ub.y);
    let w1 = q_add64(q_add64(vec2<u32>(ll.y, 0u), vec2<u32>(lh.x, 0u)), vec2<u32>(hl.x, 0u));
    let w2 = q_add64(q_add64(q_add64(vec2<u32>(lh.y, 0u), vec2<u32>(hl.y, 0u)), vec2<u32>(hh.x, 0u)),
                     vec2<u32>(w1.y, 0u));
    let w3 = hh.y + w2.y;
    let r = vec2<u32>((w1.x >> 30u) | (w2.x << 2u), (w2.x >> 30u) | (w3 << 2u));
    return select(r, neg64(r), is_neg64(a) != is_neg64(b));
}

fn less64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

// A positive Q60 value (at least 2^23, i.e. 2^-37) as float32, rounded to nearest even.
fn q60_to_f32(x: vec2<u32>) -> f32 {
    var p = 31u - countLeadingZeros(x.x);
    if (x.y != 0u) {
        p = 63u - countLeadingZeros(x.y);
    }
    let s = p - 23u;  // bits below the 24 kept
    var m = q_shr64(x, s).x;
    var rest = vec2<u32>(x.x, 0u);
    var half = vec2<u32>(0u, 0u);
    if (s < 32u) {
        rest = vec2<u32>(x.x & ((1u << s) - 1u), 0u);
        half = vec2<u32>(1u << (s - 1u), 0u);
    } else {
        rest = vec2<u32>(x.x, x.y & ((1u << (s - 32u)) - 1u));
        half = select(vec2<u32>(0u, 1u << (s - 33u)), vec2<u32>(0x80000000u, 0u), s == 32u);
    }
    if (less64(half, rest) || (all(rest == half) && (m & 1u) == 1u)) {
        m += 1u;
    }
    return ldexp(f32(m), i32(s) - 60);
}

fn ln_f32(v: f32, tab: u32) -> f32 {
    let bits = bitcast<u32>(v);
    let e = ((bits >> 23u) & 0xffu) - 127u;
    let mant = (bits & 0x7fffffu) | 0x800000u;
    if (bits == 0x3f800000u) {
        return 0.0;  // ln 1
    }
    let k = (mant >> 16u) & 0x7fu;
    let ik = buf[tab + 3u * k];
    // u = m i_k - 1 = (mant * ik - 2^47) / 2^47, in Q62: (mant * ik - 2^47) * 2^15
    let t = q_add64(q_mulu_wide(mant, ik), vec2<u32>(0u, 0xffff8000u));
    let u = vec2<u32>(t.x << 15u, (t.y << 15u) | (t.x >> 17u));
    var h = vec2<u32>(0xaaaaaaabu, 0x0aaaaaaau);  // 1/6 in Q62
    h = q_add64(vec2<u32>(0xcccccccdu, 0x0cccccccu), neg64(mul_q62(u, h)));  // 1/5 - u h
    h = q_add64(vec2<u32>(0u, 0x10000000u), neg64(mul_q62(u, h)));  // 1/4
    h = q_add64(vec2<u32>(0x55555555u, 0x15555555u), neg64(mul_q62(u, h)));  // 1/3
    h = q_add64(vec2<u32>(0u, 0x20000000u), neg64(mul_q62(u, h)));  // 1/2
    h = q_add64(vec2<u32>(0u, 0x40000000u), neg64(mul_q62(u, h)));  // 1
    let ln1u = q_shr64(mul_q62(u, h), 2u);  // Q60
    let lk = vec2<u32>(buf[tab + 3u * k + 1u], buf[tab + 3u * k + 2u]);
    let eln2 = q_add64(q_mulu_wide(e, buf[tab + 384u]), vec2<u32>(0u, e * buf[tab + 385u]));
    return q60_to_f32(q_add64(q_add64(eln2, lk), ln1u));
}
