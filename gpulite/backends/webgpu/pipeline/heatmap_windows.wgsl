// RefineLandmarksFromHeatmap's window sums on the GPU: for landmark i (one workgroup each), the
// cell (trunc(x * scale.x), trunc(y * scale.y)) of the landmark tensor's raw pixel coordinates on
// the (H, W, N) heatmap, and over the (2 * half + 1)^2 window around it (cells past the heatmap
// left out): the sum of sigmoid(logit), its max, and the sums weighted by the column and row
// index. Out: 8 floats a landmark: total, best, sum of col * conf, sum of row * conf, col, row
// (-1, -1 when the cell is off the heatmap: nothing summed), 0, 0. The host divides.
struct Params {
  dims: vec4<u32>,   // landmarks N, values per landmark, heatmap width, height
  half: vec4<u32>,   // window half size (kernel_size - 1) / 2, -, -, -
  scale: vec4<f32>,  // heatmap cells per landmark pixel in x, y, -, -
}

@group(0) @binding(0) var<storage, read> landmarks: array<f32>;
@group(0) @binding(1) var<storage, read> heatmap: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

const WG: u32 = 64u;
var<workgroup> part: array<vec4<f32>, WG>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = wid.x;
  let n = P.dims.x;
  let w = i32(P.dims.z);
  let h = i32(P.dims.w);
  let fx = trunc(landmarks[i * P.dims.y] * P.scale.x);
  let fy = trunc(landmarks[i * P.dims.y + 1u] * P.scale.y);
  let inside = fx >= 0.0 && fx < f32(w) && fy >= 0.0 && fy < f32(h);
  let col = select(0, i32(fx), inside);
  let row = select(0, i32(fy), inside);
  let k = 2u * P.half.x + 1u;
  var acc = vec4<f32>(0.0);  // total, best, col-weighted, row-weighted
  if (inside) {
    for (var c = lid; c < k * k; c += WG) {
      let r = row + i32(c / k) - i32(P.half.x);
      let q = col + i32(c % k) - i32(P.half.x);
      if (r >= 0 && r < h && q >= 0 && q < w) {
        let v = clamp(heatmap[(u32(r) * u32(w) + u32(q)) * n + i], -80.0, 80.0);
        let conf = 1.0 / (1.0 + exp(-v));
        acc = vec4<f32>(acc.x + conf, max(acc.y, conf), acc.z + f32(q) * conf, acc.w + f32(r) * conf);
      }
    }
  }
  part[lid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      let a = part[lid];
      let b = part[lid + s];
      part[lid] = vec4<f32>(a.x + b.x, max(a.y, b.y), a.z + b.z, a.w + b.w);
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let t = part[0];
    dst[i * 8u] = t.x;
    dst[i * 8u + 1u] = t.y;
    dst[i * 8u + 2u] = t.z;
    dst[i * 8u + 3u] = t.w;
    dst[i * 8u + 4u] = select(-1.0, fx, inside);
    dst[i * 8u + 5u] = select(-1.0, fy, inside);
    dst[i * 8u + 6u] = 0.0;
    dst[i * 8u + 7u] = 0.0;
  }
}
