// Strided windows of the convolutions and pools: `//#include "window.wgsl"`. Besides
// nhwc.wgsl's fields, reads P.stride_h, P.stride_w, P.pad_top, P.pad_left, P.k_h and P.k_w.
//#include "nhwc.wgsl"

// One output pixel's window. Tap (ky, kx) reads input row origin.x + ky * dil.x and column
// origin.y + kx * dil.y (origin is negative where the window starts in the padding). The taps
// inside the input are ky in [taps.x, taps.y) and kx in [taps.z, taps.w); those outside
// contribute nothing (padding is not a value), so a loop over these ranges visits the taps
// inside in their usual order. A range may be empty (end <= start).
struct Window {
    origin: vec2<i32>,
    dil: vec2<u32>,
    taps: vec4<u32>,
}

// The window of output pixel p with dilation dil (rows, columns).
fn window(p: Pixel, dil: vec2<u32>) -> Window {
    let o = vec2<i32>(i32(p.y * P.stride_h) - P.pad_top, i32(p.x * P.stride_w) - P.pad_left);
    let d = vec2<i32>(dil);
    let first = select(vec2<i32>(0), (d - 1 - o) / d, o < vec2<i32>(0));
    let size = vec2<i32>(i32(P.in_h), i32(P.in_w));
    let end = clamp((size - o + d - 1) / d, vec2<i32>(0), vec2<i32>(i32(P.k_h), i32(P.k_w)));
    return Window(o, dil, vec4<u32>(u32(first.x), u32(end.x), u32(first.y), u32(end.y)));
}

// The input row (.x) and column (.y) that tap (ky, kx) of window w reads.
fn window_cell(w: Window, ky: u32, kx: u32) -> vec2<u32> {
    return vec2<u32>(w.origin + vec2<i32>(vec2<u32>(ky, kx) * w.dil));
}
