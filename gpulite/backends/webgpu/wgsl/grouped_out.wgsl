// The output side of the grouped convolution (grouped_conv.py): `//#include "grouped_out.wgsl"`.
//#include "nhwc.wgsl"

// Writes acc, through the fused activation, to output channels 4q.. of group g at pixel p; the
// last quad of a group writes only the channels that exist.
fn store_quad(p: Pixel, g: u32, q: u32, acc: vec4<f32>) {
    let j = q * 4u;
    let ob = P.out_off + out_index(p, P.out_c) + g * P.group_out + j;
    let n = min(4u, P.group_out - j);
    buf[ob] = act(acc.x);
    if (n > 1u) { buf[ob + 1u] = act(acc.y); }
    if (n > 2u) { buf[ob + 2u] = act(acc.z); }
    if (n > 3u) { buf[ob + 3u] = act(acc.w); }
}
