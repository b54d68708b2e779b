// TensorsToDetections on the GPU: score every anchor, decode the ones that pass the threshold
// and append them to a compact list (an atomic counter gives each its slot), so the host reads
// back only the candidates instead of every regressor.
// Record layout (f32 words): anchor index (u32 bits), score, class (u32 bits),
// ymin, xmin, ymax, xmax, then x, y per keypoint.

struct Params {
  sizes: vec4<u32>,   // num_boxes, num_coords, num_classes, num_keypoints
  offs: vec4<u32>,    // regressor word offset, score word offset, box coord offset, keypoint coord offset
  misc: vec4<u32>,    // values per keypoint, flags, record stride (words), 0
  scales: vec4<f32>,  // x, y, w, h scale
  thresh: vec4<f32>,  // score clipping threshold, min score, 0, 0
};

const REVERSE: u32 = 1u;    // reverse_output_order: x before y
const EXP_SIZE: u32 = 2u;   // apply_exponential_on_box_size
const SIGMOID: u32 = 4u;    // sigmoid_score
const CLIP: u32 = 8u;       // score_clipping_thresh set
const THRESH: u32 = 16u;    // min_score_thresh set

@group(0) @binding(0) var<storage, read> reg: array<f32>;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read> anchors: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> count: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> records: array<f32>;
@group(0) @binding(5) var<uniform> P: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= P.sizes.x) {
    return;
  }
  let flags = P.misc.y;
  // Best class (the first of equal maxima, as argmax), clipped, then sigmoid.
  var best = scores[P.offs.y + i * P.sizes.z];
  var cls = 0u;
  for (var c = 1u; c < P.sizes.z; c++) {
    let s = scores[P.offs.y + i * P.sizes.z + c];
    if (s > best) {
      best = s;
      cls = c;
    }
  }
  if ((flags & CLIP) != 0u) {
    best = clamp(best, -P.thresh.x, P.thresh.x);
  }
  if ((flags & SIGMOID) != 0u) {
    best = 1.0 / (1.0 + exp(-best));
  }
  if ((flags & THRESH) != 0u && !(best >= P.thresh.y)) {
    return;
  }
  let a = anchors[i];
  let r = P.offs.x + i * P.sizes.y + P.offs.z;
  var xc = reg[r + 1u];
  var yc = reg[r];
  var h = reg[r + 2u];
  var w = reg[r + 3u];
  if ((flags & REVERSE) != 0u) {
    xc = reg[r];
    yc = reg[r + 1u];
    w = reg[r + 2u];
    h = reg[r + 3u];
  }
  xc = xc / P.scales.x * a.z + a.x;
  yc = yc / P.scales.y * a.w + a.y;
  if ((flags & EXP_SIZE) != 0u) {
    h = exp(h / P.scales.w) * a.w;
    w = exp(w / P.scales.z) * a.z;
  } else {
    h = h / P.scales.w * a.w;
    w = w / P.scales.z * a.z;
  }
  let slot = atomicAdd(&count[0], 1u);
  let o = slot * P.misc.z;
  records[o] = bitcast<f32>(i);
  records[o + 1u] = best;
  records[o + 2u] = bitcast<f32>(cls);
  records[o + 3u] = yc - h / 2.0;
  records[o + 4u] = xc - w / 2.0;
  records[o + 5u] = yc + h / 2.0;
  records[o + 6u] = xc + w / 2.0;
  for (var k = 0u; k < P.sizes.w; k++) {
    let kr = P.offs.x + i * P.sizes.y + P.offs.w + k * P.misc.x;
    var kx = reg[kr + 1u];
    var ky = reg[kr];
    if ((flags & REVERSE) != 0u) {
      kx = reg[kr];
      ky = reg[kr + 1u];
    }
    records[o + 7u + 2u * k] = kx / P.scales.x * a.z + a.x;
    records[o + 8u + 2u * k] = ky / P.scales.y * a.w + a.y;
  }
}
