// The output side of the convolutions: `//#include "conv_out.wgsl"`.

// finish(): the fused activation, or a fused PReLU with per-channel alpha ($FINISH: conv.py).
fn finish(v: f32, c: u32) -> f32 {
    $FINISH
}

// Writes acc, through finish(), to output channels oc.. at index ob of a pixel with ch
// channels: ch need not be a multiple of 4, the last group writes only the channels that exist.
fn store4(ob: u32, oc: u32, ch: u32, acc: vec4<f32>) {
    let n = min(4u, ch - oc);
    buf[ob] = finish(acc.x, oc);
    if (n > 1u) { buf[ob + 1u] = finish(acc.y, oc + 1u); }
    if (n > 2u) { buf[ob + 2u] = finish(acc.z, oc + 2u); }
    if (n > 3u) { buf[ob + 3u] = finish(acc.w, oc + 3u); }
}
