// A mask on a region's tensor -> the mask over the whole image (SegmentationProjection on the GPU):
// cv2.warpAffine(mask, A, (W, H), INTER_LINEAR | WARP_INVERSE_MAP, BORDER_CONSTANT 0) as OpenCV
// computes it: source positions in OpenCV's fixed point (1/1024 rounded, then 1/32 pixel), the
// four taps weighted by the 1/32-step bilinear table, taps outside the mask reading 0. The
// tensor's raw values go through the activation first (sigmoid when flags bit 0, then clipped to
// [0, 1], as TensorsToSegmentation on the tensor's grid). One thread per output pixel.
struct Params {
  a0: vec4<f32>,    // a00, a01, a02, -
  a1: vec4<f32>,    // a10, a11, a12, -
  src: vec4<u32>,   // mask width, height, flags (bit 0: sigmoid), element offset of the mask
  out: vec4<u32>,   // output width, height, -, -
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;

fn texel(x: i32, y: i32) -> f32 {
  if (x < 0 || y < 0 || x >= i32(P.src.x) || y >= i32(P.src.y)) {
    return 0.0;
  }
  var v = src[P.src.w + u32(y) * P.src.x + u32(x)];
  if ((P.src.z & 1u) != 0u) {
    v = 1.0 / (exp(-v) + 1.0);
  }
  return clamp(v, 0.0, 1.0);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= P.out.x * P.out.y) {
    return;
  }
  let x = f32(i % P.out.x);
  let y = f32(i / P.out.x);
  // OpenCV: X = (round(a00 * x * 1024) + round((a01 * y + a02) * 1024) + 16) >> 5, in 1/32 pixels
  let xs = i32(round(P.a0.x * x * 1024.0)) + i32(round((P.a0.y * y + P.a0.z) * 1024.0)) + 16;
  let ys = i32(round(P.a1.x * x * 1024.0)) + i32(round((P.a1.y * y + P.a1.z) * 1024.0)) + 16;
  let sx = xs >> 5u;
  let sy = ys >> 5u;
  let x0 = sx >> 5u;
  let y0 = sy >> 5u;
  let fx = f32(sx & 31) / 32.0;
  let fy = f32(sy & 31) / 32.0;
  dst[i] = texel(x0, y0) * ((1.0 - fx) * (1.0 - fy)) + texel(x0 + 1, y0) * (fx * (1.0 - fy))
         + texel(x0, y0 + 1) * ((1.0 - fx) * fy) + texel(x0 + 1, y0 + 1) * (fx * fy);
}
