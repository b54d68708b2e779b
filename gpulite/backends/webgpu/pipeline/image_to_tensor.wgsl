// ImageToTensor on the GPU: bilinear warp of an 8-bit RGB(A) image into a float32 NHWC tensor.
// One thread per output pixel. The image is read as bytes packed in u32 words (so an RGB
// frame is uploaded as-is, 3 bytes a pixel, with no host-side conversion); the sampling
// geometry is the CPU path's (OpenCV's): tensor pixel (x, y) reads image pixel A @ (x, y, 1).

struct Params {
  a0: vec4<f32>,    // a00, a01, a02, value scale
  a1: vec4<f32>,    // a10, a11, a12, value offset
  image: vec4<u32>, // width, height, bytes per pixel, bytes per row
  out: vec4<u32>,   // width, height, flags (bit 0 border: 0 zero, 1 replicate; bit 1 match OpenCV),
                    // byte offset of pixel (0, 0)
};

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;

fn byte_at(i: u32) -> f32 {
  return f32((src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu);
}

fn texel(x: i32, y: i32) -> vec3<f32> {
  let w = i32(P.image.x);
  let h = i32(P.image.y);
  var xx = x;
  var yy = y;
  if ((P.out.z & 1u) == 0u) {
    if (x < 0 || y < 0 || x >= w || y >= h) {
      return vec3<f32>(0.0);  // black: becomes the range minimum after the value transform
    }
  } else {
    xx = clamp(x, 0, w - 1);
    yy = clamp(y, 0, h - 1);
  }
  let b = P.out.w + u32(yy) * P.image.w + u32(xx) * P.image.z;
  return vec3<f32>(byte_at(b), byte_at(b + 1u), byte_at(b + 2u));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= P.out.x * P.out.y) {
    return;
  }
  let x = f32(i % P.out.x);
  let y = f32(i / P.out.x);
  var sx = P.a0.x * x + P.a0.y * y + P.a0.z;
  var sy = P.a1.x * x + P.a1.y * y + P.a1.z;
  let opencv = (P.out.z & 2u) != 0u;
  if (opencv) {  // OpenCV samples at 1/32-pixel positions
    sx = floor(sx * 32.0 + 0.5) / 32.0;
    sy = floor(sy * 32.0 + 0.5) / 32.0;
  }
  let flx = floor(sx);
  let fly = floor(sy);
  let fx = sx - flx;
  let fy = sy - fly;
  let x0 = i32(flx);
  let y0 = i32(fly);
  var v = texel(x0, y0) * ((1.0 - fx) * (1.0 - fy)) + texel(x0 + 1, y0) * (fx * (1.0 - fy))
        + texel(x0, y0 + 1) * ((1.0 - fx) * fy) + texel(x0 + 1, y0 + 1) * (fx * fy);
  if (opencv) {  // and rounds the result to a whole grey level
    v = floor(v + vec3<f32>(0.5));
  }
  let o = v * P.a0.w + vec3<f32>(P.a1.w);
  dst[i * 3u] = o.x;
  dst[i * 3u + 1u] = o.y;
  dst[i * 3u + 2u] = o.z;
}
