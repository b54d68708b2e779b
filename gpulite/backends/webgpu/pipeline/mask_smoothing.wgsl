// SegmentationSmoothing on the GPU: out = new + (previous - new) * uncertainty(new) * ratio, with
// MediaPipe's polynomial uncertainty (segmentation_smoothing.py's smooth_mask, float32).
struct Params {
  n: u32,
  ratio: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> cur: array<f32>;
@group(0) @binding(1) var<storage, read> prev: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= P.n) {
    return;
  }
  let c = cur[i];
  let t = c - 0.5;
  let x = t * t;
  let poly = x * (5.68842 + x * (-0.748699 + x * (-57.8051 + x * (291.309 + x * -624.717))));
  let uncertainty = 1.0 - min(1.0, poly);
  dst[i] = c + (prev[i] - c) * (uncertainty * P.ratio);
}
