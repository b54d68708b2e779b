"""MediaPipe's custom ops: Convolution2DTransposeBias, Landmarks2TransformMatrix,
TransformTensorBilinear and TransformLandmarks.

Oracles:

* ``Convolution2DTransposeBias``: LiteRT 2.3 runs it (its default XNNPACK delegate
  implements MediaPipe's op), so single-op models are compared with LiteRT, including one
  with the selfie segmenter's real weights. Cases LiteRT refuses (stride larger than a
  SAME kernel; resized inputs) are compared with a loop transcription of MediaPipe's
  ``TransposeConvBias`` (bias first, then every input pixel's taps accumulated).
* The other three are not in LiteRT. Each is compared with an INDEPENDENT numpy definition
  written in this file from MediaPipe's published sources
  (``mediapipe/util/tflite/operations/*.cc``) and deliberately written differently from
  the kernels: per-pixel / per-landmark Python loops instead of vectorised gathers, an
  explicit product of the four 4x4 matrices instead of the kernel's closed form, plus
  geometric properties of the matrix that do not depend on transcribing the formula.
  The models use the custom-options bytes of ``face_landmark_with_attention.tflite``.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from flatbuffers import flexbuffers

from gpulite import Interpreter
from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import get_kernel
from gpulite.errors import ModelError, ShapeError, UnsupportedOpError
from gpulite.model import custom_options as co
from gpulite.model.opdefs import Op, decode_custom_options
from gpulite.testing.tflite_writer import ModelBuilder
from tests.assets import model_path
from tests.compare import assert_same
from tests.ops.harness import check_op, run_gpulite

FACE = "face_landmark_with_attention"
SELFIE = "selfie_segmentation"
MEDIAPIPE_OPS = ("Convolution2DTransposeBias", "Landmarks2TransformMatrix", "TransformTensorBilinear",
                 "TransformLandmarks")
F32 = np.float32


def _real_options(name: str, op: str) -> list[bytes]:
    """The custom-options bytes of every ``op`` node of a zoo model, in node order."""
    from gpulite.model.reader import load

    m = load(model_path(name))
    return [bytes(o.custom_options or b"") for o in m.subgraphs[0].operators if o.op == op]


@pytest.fixture(scope="module")
def l2tm_options() -> list[bytes]:
    return _real_options(FACE, "Landmarks2TransformMatrix")


@pytest.fixture(scope="module")
def ttb_options() -> bytes:
    opts = _real_options(FACE, "TransformTensorBilinear")
    assert len(opts) == 3 and len(set(opts)) == 1
    return opts[0]


# =====================================================================================
# Independent references (from MediaPipe's sources; see the module docstring)
# =====================================================================================
def ref_transpose_conv_bias(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride_h: int, stride_w: int,
                            same: bool) -> np.ndarray:
    """transpose_conv_bias.cc: output size from Prepare, then bias + scattered taps, as loops."""
    n, h, wd, _c = x.shape
    o, fh, fw, _ = w.shape

    def size(i: int, f: int, s: int) -> tuple[int, int]:
        pad = max(0, f - (i - 1) % s - 1) if same else 0
        return s * (i - 1) + f - pad, pad // 2

    oh, pad_h = size(h, fh, stride_h)
    ow, pad_w = size(wd, fw, stride_w)
    out = np.empty((n, oh, ow, o), np.float64)
    out[...] = b.astype(np.float64)
    for bi in range(n):
        for iy in range(h):
            for ix in range(wd):
                for fy in range(fh):
                    for fx in range(fw):
                        oy, ox = iy * stride_h - pad_h + fy, ix * stride_w - pad_w + fx
                        if 0 <= oy < oh and 0 <= ox < ow:
                            out[bi, oy, ox] += w[:, fy, fx, :].astype(np.float64) @ x[bi, iy, ix].astype(np.float64)
    return out.astype(F32)


def _translate(tx: float, ty: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 3], m[1, 3] = tx, ty
    return m


def _rotate(r: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 0], m[0, 1], m[1, 0], m[1, 1] = math.cos(r), -math.sin(r), math.sin(r), math.cos(r)
    return m


def ref_landmarks_to_transform_matrix(landmarks: np.ndarray, opts: dict) -> np.ndarray:
    """LandmarksToTransformMatrixV2: EstimateRotationRadians, EstimateCenterAndSize, then
    the product t_shift * t_rotation * t_scale * t_shift2 of explicit 4x4 matrices."""
    pts = [tuple(float(v) for v in p) for p in landmarks.reshape(-1, 3)]
    lx, ly, _ = pts[opts["left_rotation_idx"]]
    rx, ry, _ = pts[opts["right_rotation_idx"]]
    rotation = opts.get("target_rotation_radians", 0.0) - math.atan2(ry - ly, rx - lx)
    cos_r, sin_r = math.cos(rotation), math.sin(rotation)
    xs, ys = [], []
    for i in opts["subset_idxs"]:
        x, y, _ = pts[i]
        xs.append(cos_r * x - sin_r * y)
        ys.append(sin_r * x + cos_r * y)
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    mx, my = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    cx = math.cos(-rotation) * mx - math.sin(-rotation) * my
    cy = math.sin(-rotation) * mx + math.cos(-rotation) * my
    ow, oh = opts["output_width"], opts["output_height"]
    scale = np.diag([opts["scale_x"] * width / ow, opts["scale_y"] * height / oh, 1.0, 1.0])
    m = _translate(cx, cy) @ _rotate(-rotation) @ scale @ _translate(-ow / 2.0, -oh / 2.0)
    return m.astype(F32).reshape(1, 4, 4)


def ref_transform_tensor_bilinear(img: np.ndarray, matrix: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """TransformTensorBilinearV2, pixel by pixel: half-pixel corrected float32 coordinates,
    0 outside [0, W-1] x [0, H-1], corners past the edge read as 0."""
    _, h, w, c = img.shape
    m = [F32(v) for v in matrix.reshape(16)]
    # x_transform[3] += x_transform[0] * 0.5 + x_transform[1] * 0.5 - 0.5 (double, stored to float)
    x3 = F32(float(m[3]) + (float(m[0]) * 0.5 + float(m[1]) * 0.5 - 0.5))
    y3 = F32(float(m[7]) + (float(m[4]) * 0.5 + float(m[5]) * 0.5 - 0.5))
    zero = F32(0)

    def read(yy: int, xx: int) -> np.ndarray:
        if 0 <= yy < h and 0 <= xx < w:
            return img[0, yy, xx].astype(np.float64)
        return np.zeros(c)

    out = np.zeros((1, oh, ow, c), F32)
    for oy in range(oh):
        for ox in range(ow):
            fx_, fy_ = F32(ox), F32(oy)
            tx = m[0] * fx_ + m[1] * fy_ + m[2] * zero + x3 * F32(1)
            ty = m[4] * fx_ + m[5] * fy_ + m[6] * zero + y3 * F32(1)
            if tx < 0 or tx > w - 1 or ty < 0 or ty > h - 1:
                continue
            x0, y0 = math.floor(tx), math.floor(ty)
            right, low = float(tx - F32(x0)), float(ty - F32(y0))
            upper = (1 - right) * read(y0, x0) + right * read(y0, x0 + 1)
            lower = (1 - right) * read(y0 + 1, x0) + right * read(y0 + 1, x0 + 1)
            with np.errstate(invalid="ignore"):
                out[0, oy, ox] = low * lower + (1 - low) * upper
    return out


def _fused_slack(*products: np.ndarray) -> np.ndarray:
    """How far fusing one of ``products`` (exact float64 products of float32 operands) into the
    addition that follows can move that addition before its own rounding: the skipped rounding
    of the product, ``|fl32(p) - p|``, for whichever product is fused."""
    return np.max([np.abs(p.astype(F32).astype(np.float64) - p) for p in products], axis=0)


def _ulp(v: np.ndarray) -> np.ndarray:
    return np.spacing(np.abs(v).astype(F32)).astype(np.float64)


def bilinear_contraction_bound(img: np.ndarray, matrix: np.ndarray, oh: int, ow: int
                               ) -> tuple[np.ndarray, np.ndarray]:
    """What WGSL lets a TransformTensorBilinear kernel differ from :func:`ref_transform_tensor_bilinear`
    by, per output element: ``(bound, undecided)``.

    WGSL allows an implementation to contract ``a * b + c`` into one fused multiply-add (NVIDIA's
    compiler does; lavapipe does not); every other operation is correctly rounded, and the
    half-pixel correction is the kernel's own integer arithmetic, bit-exact everywhere. The
    reference rounds the coordinates step by step in float32, as the kernel does unfused, and
    blends in float64. So:

    - coordinates ``t = m0 x + m1 y + m2 0 + r3``: a fused product skips its rounding, moving
      the first sum ``s`` by ``|fl(p) - p|`` before ``s`` is rounded (then up to an ulp of
      ``s`` away), and ``t``, rounded afresh, one ulp of ``t`` more; 0 where both products are
      exact, so the kernel's own rounding is then checked bit for bit;
    - each blend ``u (1 - w) + v w`` in float32, fused or not, against the exact blend: at most
      an ulp per rounding (``1 - w``, both products, the sum), plus the inputs' error weighted,
      plus ``spread * dt``: the most the neighbourhood's values (zeros past the edge included)
      change per unit of coordinate (bilinear interpolation is continuous, so a ``floor`` that
      flips changes nothing more; the 4x4 neighbourhood covers both cells);
    - the output ``lower * low + upper * (1 - low)`` the same way, plus ``spread * dt_y`` and
      the reference's own rounding to float32.

    ``undecided`` marks elements whose coordinate lies within ``dt`` of the input's edge, where
    a moved coordinate may flip the inside/outside decision (0 against a sampled value).
    """
    _, h, w, c = img.shape
    m = matrix.reshape(16).astype(F32).astype(np.float64)
    x3 = F32(m[3] + (m[0] * 0.5 + m[1] * 0.5 - 0.5))
    y3 = F32(m[7] + (m[4] * 0.5 + m[5] * 0.5 - 0.5))
    fy, fx = (a.astype(np.float64) for a in np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij"))

    def coordinate(r0: float, r1: float, r3) -> tuple[np.ndarray, np.ndarray]:
        p0, p1 = r0 * fx, r1 * fy
        s = p0.astype(F32) + p1.astype(F32)  # float32, as the reference (+ m2 * 0 adds nothing)
        t = (s + F32(r3)).astype(np.float64)
        ds = _fused_slack(p0, p1)
        ds = np.where(ds > 0, ds + _ulp(s), 0.0)
        return t, np.where(ds > 0, ds + _ulp(t), 0.0)

    tx, dtx = coordinate(m[0], m[1], x3)
    ty, dty = coordinate(m[4], m[5], y3)
    undecided = ((np.abs(tx) <= dtx) | (np.abs(tx - (w - 1)) <= dtx)
                 | (np.abs(ty) <= dty) | (np.abs(ty - (h - 1)) <= dty))
    pad = np.zeros((h + 6, w + 6, c))
    pad[3:h + 3, 3:w + 3] = img[0]
    x0 = np.clip(np.floor(tx), -2, w).astype(int) + 3  # index of column x0 in pad
    y0 = np.clip(np.floor(ty), -2, h).astype(int) + 3
    hood = np.stack([pad[y0 + i, x0 + j] for i in range(-1, 3) for j in range(-1, 3)])  # (16, oh, ow, c)
    spread = hood.max(axis=0) - hood.min(axis=0)
    right, low = (tx - np.floor(tx))[..., None], (ty - np.floor(ty))[..., None]
    a, b, cc, d = (pad[y0 + i, x0 + j] for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))

    def blend(u: np.ndarray, du: np.ndarray, v: np.ndarray, dv: np.ndarray, wt: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """``u (1 - wt) + v wt`` and how far a float32 evaluation (fused or not) may be from it
        exactly, given ``u``, ``v`` off by ``du``, ``dv``: each rounding at most an ulp."""
        w1 = 1 - wt
        pu, pv = u * w1, v * wt
        value = pu + pv
        return value, w1 * du + wt * dv + np.abs(u) * _ulp(w1) + _ulp(pu) + _ulp(pv) + _ulp(value)

    upper, du = blend(a, 0.0, b, 0.0, right)
    lower, dl = blend(cc, 0.0, d, 0.0, right)
    du, dl = du + spread * dtx[..., None], dl + spread * dtx[..., None]
    out, dout = blend(upper, du, lower, dl, low)
    bound = dout + spread * dty[..., None] + _ulp(out)
    return bound[None], np.broadcast_to(undecided[None, ..., None], bound[None].shape)


def assert_within_contraction(out: np.ndarray, ref: np.ndarray, img: np.ndarray, matrix: np.ndarray) -> None:
    """``out`` (a TransformTensorBilinear kernel's) against ``ref`` within
    :func:`bilinear_contraction_bound`: exact where the kernel's rounding is its own (the
    inside/outside pattern), within the bound elsewhere, either 0 or within the bound where
    the decision is undecided."""
    bound, undecided = bilinear_contraction_bound(img, matrix, ref.shape[1], ref.shape[2])
    diff = np.abs(out.astype(np.float64) - ref)
    ok = (diff <= bound) | (undecided & ((out == 0) | (ref == 0)))
    assert np.array_equal(out == 0, ref == 0) or undecided[(out == 0) != (ref == 0)].all(), \
        "the inside/outside pattern differs away from the edges"
    if not ok.all():
        i = np.unravel_index(np.argmax(~ok), out.shape)
        raise AssertionError(f"{np.count_nonzero(~ok)} of {out.size} elements beyond what contraction allows; "
                             f"at {i}: got {out[i]!r}, reference {ref[i]!r}, bound {bound[i]:.3g}")


def ref_transform_landmarks(lm: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """TransformLandmarksV2, landmark by landmark: float32 dot products of (x, y, 0, 1)."""
    m = [F32(v) for v in matrix.reshape(16)]
    out = lm.copy()
    for i in range(lm.shape[1]):
        v = (F32(lm[0, i, 0]), F32(lm[0, i, 1]), F32(0), F32(1))
        out[0, i, 0] = m[0] * v[0] + m[1] * v[1] + m[2] * v[2] + m[3] * v[3]
        out[0, i, 1] = m[4] * v[0] + m[5] * v[1] + m[6] * v[2] + m[7] * v[3]
    return out


# =====================================================================================
# Model builders
# =====================================================================================
def transpose_conv_bias_model(x_shape, w: np.ndarray, b: np.ndarray, stride_h: int, stride_w: int,
                              padding: int, out_shape) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", x_shape, F32)
    wi, bi = mb.const("w", w), mb.const("b", b)
    y = mb.tensor("y", out_shape, F32)
    mb.custom_op("Convolution2DTransposeBias", [x, wi, bi], [y],
                 custom_options=struct.pack("<3i", padding, stride_w, stride_h))
    mb.output(y)
    return mb.build()


def l2tm_model(n_landmarks: int, options: bytes, version: int = 2) -> bytes:
    mb = ModelBuilder()
    x = mb.input("landmarks", (1, n_landmarks, 3), F32)
    y = mb.tensor("matrix", (1, 4, 4), F32)
    mb.custom_op("Landmarks2TransformMatrix", [x], [y], custom_options=options, op_version=version)
    mb.output(y)
    return mb.build()


def ttb_model(in_shape, options: bytes, out_hw=(16, 16), version: int = 2) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", in_shape, F32)
    m = mb.input("matrix", (1, 4, 4), F32)
    y = mb.tensor("y", (1, *out_hw, in_shape[3]), F32)
    mb.custom_op("TransformTensorBilinear", [x, m], [y], custom_options=options, op_version=version)
    mb.output(y)
    return mb.build()


def tl_model(shape, version: int = 2) -> bytes:
    mb = ModelBuilder()
    x = mb.input("landmarks", shape, F32)
    m = mb.input("matrix", (1, 4, 4), F32)
    y = mb.tensor("y", shape, F32)
    mb.custom_op("TransformLandmarks", [x, m], [y], op_version=version)
    mb.output(y)
    return mb.build()


def face_like_landmarks(rng: np.random.Generator, n: int = 468, centre=(24.0, 24.0), spread=9.0,
                        tilt: float = 0.3) -> np.ndarray:
    """A tilted, roughly face-sized cloud of 3-D landmarks in a 48x48 feature map's pixels."""
    p = rng.uniform(-1, 1, (n, 2)) * spread
    c, s = math.cos(tilt), math.sin(tilt)
    p = p @ np.array([[c, -s], [s, c]]).T + centre
    z = rng.normal(0, 3, (n, 1))
    return np.concatenate([p, z], axis=1).astype(F32).reshape(1, n, 3)


# =====================================================================================
# Convolution2DTransposeBias
# =====================================================================================
# (N, H, W, C, O, fh, fw, stride_h, stride_w, padding: 1 SAME / 2 VALID)
TCB_CASES = {
    "selfie-geometry": (1, 16, 16, 16, 1, 2, 2, 2, 2, 1),
    "same-3x3-s2": (1, 5, 6, 3, 2, 3, 3, 2, 2, 1),
    "valid-3x2-s2x3": (1, 5, 6, 3, 2, 3, 2, 2, 3, 2),
    "same-4x4-s3x2-batch2": (2, 5, 5, 4, 3, 4, 4, 3, 2, 1),
    "same-5x5-s2": (1, 5, 5, 2, 2, 5, 5, 2, 2, 1),
    "valid-1x1-s2": (1, 3, 3, 4, 2, 1, 1, 2, 2, 2),
    "same-3x3-s1": (1, 4, 7, 3, 5, 3, 3, 1, 1, 1),
}


def _tcb_case(name: str, seed: int = 0):
    n, h, w, c, o, fh, fw, sh, sw, pad = TCB_CASES[name]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(F32)
    wt = rng.standard_normal((o, fh, fw, c)).astype(F32)
    b = rng.standard_normal(o).astype(F32)
    ref = ref_transpose_conv_bias(x, wt, b, sh, sw, pad == 1)
    model = transpose_conv_bias_model(x.shape, wt, b, sh, sw, pad, ref.shape)
    return model, x, ref


@pytest.mark.parametrize("case", sorted(TCB_CASES))
def test_transpose_conv_bias_vs_litert(case: str, backend: str) -> None:
    """Single-op models against LiteRT (which implements the op through XNNPACK)."""
    model, x, _ = _tcb_case(case)
    check_op(model, [x], backend)


@pytest.mark.parametrize("case", sorted(TCB_CASES))
def test_transpose_conv_bias_vs_loops(case: str, backend: str) -> None:
    """The same models against the loop transcription of MediaPipe's TransposeConvBias."""
    model, x, ref = _tcb_case(case, seed=1)
    (out,) = run_gpulite(model, [x], backend)
    assert_same(out, ref)


def test_transpose_conv_bias_stride_above_kernel(backend: str) -> None:
    """SAME with a 1x1 kernel and stride 2, which LiteRT's delegate refuses: against the loops."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 3, 4, 3)).astype(F32)
    wt = rng.standard_normal((2, 1, 1, 3)).astype(F32)
    b = rng.standard_normal(2).astype(F32)
    ref = ref_transpose_conv_bias(x, wt, b, 2, 2, True)
    assert ref.shape == (1, 5, 7, 2)  # MediaPipe's SAME: 2*(in-1)+1, not TFLite's in*stride
    model = transpose_conv_bias_model(x.shape, wt, b, 2, 2, 1, ref.shape)
    (out,) = run_gpulite(model, [x], backend)
    assert_same(out, ref)


def test_transpose_conv_bias_selfie_weights(backend: str) -> None:
    """The selfie segmenter's own op (real fp16 weights folded to fp32, real shapes) vs LiteRT."""
    it = Interpreter(model_path=str(model_path(SELFIE)))
    g = it.graph
    (node,) = [n for n in g.nodes if n.op == "Convolution2DTransposeBias"]
    w, b = g.tensors[node.inputs[1]].const, g.tensors[node.inputs[2]].const
    assert w is not None and b is not None and w.dtype == F32
    x_shape, y_shape = g.tensors[node.inputs[0]].shape, g.tensors[node.outputs[0]].shape
    opts = node.options  # decoded once, at load
    assert opts == co.decode_transpose_conv_bias(node.custom_options) == co.TransposeConvBiasOptions("SAME", 2, 2)
    pad = 1 if opts.padding == "SAME" else 2
    model = transpose_conv_bias_model(x_shape, np.array(w), np.array(b), opts.stride_h, opts.stride_w, pad, y_shape)
    x = np.random.default_rng(3).standard_normal(x_shape).astype(F32)
    check_op(model, [x], backend)


def test_transpose_conv_bias_resized_input(backend: str) -> None:
    """After resize_tensor_input the shape rule and kernel follow MediaPipe's Prepare (LiteRT
    cannot resize this op, so the loops are the reference)."""
    model, _, _ = _tcb_case("same-3x3-s2")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 7, 4, 3)).astype(F32)
    it = Interpreter(model_content=model, backend=backend)
    it.resize_tensor_input(0, [2, 7, 4, 3])
    it.allocate_tensors()
    it.set_tensor(0, x)
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    g = it.graph
    node = g.nodes[0]
    w, b = g.tensors[node.inputs[1]].const, g.tensors[node.inputs[2]].const
    assert_same(out, ref_transpose_conv_bias(x, w, b, 2, 2, True))


def test_transpose_conv_bias_wrong_stored_output_shape() -> None:
    """A stored output shape other than MediaPipe's is refused at allocate_tensors."""
    rng = np.random.default_rng(5)
    wt = rng.standard_normal((2, 3, 3, 3)).astype(F32)
    model = transpose_conv_bias_model((1, 5, 6, 3), wt, np.zeros(2, F32), 2, 2, 1, (1, 10, 12, 2))
    it = Interpreter(model_content=model)
    with pytest.raises(ShapeError, match=r"stored with shape \[1, 10, 12, 2\], but its inputs give \[1, 9, 12, 2\]"):
        it.allocate_tensors()


# =====================================================================================
# Landmarks2TransformMatrix
# =====================================================================================
@pytest.mark.parametrize("which", [0, 1, 2], ids=["lips", "left-eye", "right-eye"])
def test_landmarks_to_transform_matrix_real_options(which: int, l2tm_options: list[bytes], backend: str) -> None:
    """Each of the face model's three nodes' options vs the explicit-matrix-product reference."""
    opts = l2tm_options[which]
    rng = np.random.default_rng(10 + which)
    lm = face_like_landmarks(rng, tilt=0.2 + which)
    (out,) = run_gpulite(l2tm_model(468, opts), [lm], backend)
    assert_same(out, ref_landmarks_to_transform_matrix(lm, flexbuffers.Loads(opts)))


@pytest.mark.parametrize("target", [0.0, 0.7, -2.5])
def test_landmarks_to_transform_matrix_geometry(target: float, backend: str) -> None:
    """Properties of the matrix, independent of any transcription of the formula: its linear
    part is a rotation times a diagonal scale (orthogonal columns), the crop's x axis points
    along the left->right landmark direction turned by ``-target_rotation_radians``, and the
    inverse maps the subset's rotated bounding box onto the crop's centre, ``output / scale``
    in size."""
    rng = np.random.default_rng(20)
    n = 40
    lm = face_like_landmarks(rng, n=n, tilt=1.1)
    opts = {"left_rotation_idx": 3, "right_rotation_idx": 17, "subset_idxs": list(range(5, 35)),
            "output_height": 24, "output_width": 32, "scale_x": 1.5, "scale_y": 2.0,
            "target_rotation_radians": target}
    (m,) = run_gpulite(l2tm_model(n, flexbuffers.Dumps(opts)), [lm], backend)
    m = m[0].astype(np.float64)
    assert np.allclose(m[2], [0, 0, 1, 0]) and np.allclose(m[3], [0, 0, 0, 1])
    col_x, col_y = m[:2, 0], m[:2, 1]
    assert abs(col_x @ col_y) < 1e-5 * np.linalg.norm(col_x) * np.linalg.norm(col_y)
    d = lm[0, 17, :2].astype(np.float64) - lm[0, 3, :2]
    expected_angle = math.atan2(d[1], d[0]) - target
    assert abs(math.remainder(math.atan2(col_x[1], col_x[0]) - expected_angle, 2 * math.pi)) < 1e-5
    # The crop's y axis is its x axis turned by +90 degrees (no reflection).
    assert abs(math.remainder(math.atan2(col_y[1], col_y[0]) - expected_angle - math.pi / 2, 2 * math.pi)) < 1e-5
    inv = np.linalg.inv(m)
    pts = np.concatenate([lm[0, :, :2], np.zeros((n, 1)), np.ones((n, 1))], axis=1) @ inv.T
    sub = pts[5:35, :2]
    lo, hi = sub.min(axis=0), sub.max(axis=0)
    np.testing.assert_allclose((lo + hi) / 2, [16, 12], atol=1e-4)
    np.testing.assert_allclose(hi - lo, [32 / 1.5, 24 / 2.0], rtol=1e-5)


def test_landmarks_to_transform_matrix_default_target(backend: str) -> None:
    """A map without target_rotation_radians means 0, as the C++ AsFloat of a missing key."""
    rng = np.random.default_rng(21)
    lm = face_like_landmarks(rng, n=12)
    opts = {"left_rotation_idx": 0, "right_rotation_idx": 1, "subset_idxs": [2, 3, 4, 5, 6],
            "output_height": 8, "output_width": 8, "scale_x": 1, "scale_y": 1}  # int scales: AsFloat takes them
    (out,) = run_gpulite(l2tm_model(12, flexbuffers.Dumps(opts)), [lm], backend)
    assert_same(out, ref_landmarks_to_transform_matrix(lm, opts))


def test_landmarks_to_transform_matrix_index_beyond_input(l2tm_options: list[bytes]) -> None:
    """Options naming landmark 415 on a 100-landmark input fail at allocate_tensors."""
    it = Interpreter(model_content=l2tm_model(100, l2tm_options[0]))
    with pytest.raises(ShapeError, match="holds 100"):
        it.allocate_tensors()


# =====================================================================================
# TransformTensorBilinear
# =====================================================================================
def _bilinear_matrices() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(30)
    ms = {}
    # Exact integers after the half-pixel correction: x = ox + 32 reaches W-1 = 47 exactly
    # (inclusive edge, right corner past the edge), y = oy - 8 starts outside and reaches 0.
    ms["edges"] = np.array([[1, 0, 0, 32], [0, 1, 0, -8], [0, 0, 1, 0], [0, 0, 0, 1]], F32)
    # Upsampling with a rotation: fractional weights everywhere, part of the crop outside.
    c, s = math.cos(0.6), math.sin(0.6)
    ms["rotate-zoom"] = np.array([[2.5 * c, -2.5 * s, 0, 20], [2.5 * s, 2.5 * c, 0, -6], [0, 0, 1, 0],
                                  [0, 0, 0, 1]], F32)
    # A generic affine map, including a z coefficient that multiplies 0.
    a = np.eye(4, dtype=F32)
    a[:2, :2] = rng.uniform(-3, 3, (2, 2))
    a[:2, 2] = rng.uniform(-1, 1, 2)
    a[:2, 3] = rng.uniform(0, 40, 2)
    ms["affine"] = a
    # What Landmarks2TransformMatrix gives for a face-like cloud (the model's own use).
    lm = face_like_landmarks(np.random.default_rng(31))
    opts = {"left_rotation_idx": 61, "right_rotation_idx": 291, "subset_idxs": list(range(0, 468, 7)),
            "output_height": 16, "output_width": 16, "scale_x": 1.5, "scale_y": 1.5}
    ms["from-landmarks"] = ref_landmarks_to_transform_matrix(lm, opts)[0]
    return ms


BILINEAR_MATRICES = _bilinear_matrices()


@pytest.mark.parametrize("name", sorted(BILINEAR_MATRICES))
def test_transform_tensor_bilinear(name: str, ttb_options: bytes, backend: str) -> None:
    """The face model's sampler options on (1, 48, 48, 32) vs the per-pixel loop reference."""
    rng = np.random.default_rng(32)
    img = rng.standard_normal((1, 48, 48, 32)).astype(F32)
    m = BILINEAR_MATRICES[name].reshape(1, 4, 4)
    (out,) = run_gpulite(ttb_model(img.shape, ttb_options), [img, m], backend)
    ref = ref_transform_tensor_bilinear(img, m, 16, 16)
    assert np.count_nonzero(ref.any(axis=-1)) > 0  # the case samples something
    assert_same(out, ref)


def test_transform_tensor_bilinear_edge_reads_zero(ttb_options: bytes, backend: str) -> None:
    """At x == W-1 (y == H-1) exactly, the corner past the edge must read 0 with weight 0.

    The matrix samples x, y = 2*o + 17 (17, 19, ..., 47: whole numbers, so every right and
    lower weight is 0). +inf sits at the sampled (odd) positions of the last row and
    column only, so every zero-weight neighbour inside the image is finite: MediaPipe's
    zero read past the edge gives inf there, while re-reading the clamped last row or
    column would give 0 * inf = NaN.
    """
    rng = np.random.default_rng(33)
    img = rng.standard_normal((1, 48, 48, 4)).astype(F32)
    img[0, 47, 17::2, :] = np.inf
    img[0, 17::2, 47, :] = np.inf
    m = np.array([[2, 0, 0, 16.5], [0, 2, 0, 16.5], [0, 0, 1, 0], [0, 0, 0, 1]], F32).reshape(1, 4, 4)
    (out,) = run_gpulite(ttb_model(img.shape, ttb_options), [img, m], backend)
    ref = ref_transform_tensor_bilinear(img, m, 16, 16)
    assert np.isinf(ref[0, -1]).all() and np.isinf(ref[0, :, -1]).all() and not np.isnan(ref).any()
    assert_same(out, ref)


def test_transform_tensor_bilinear_resized_input(ttb_options: bytes, backend: str) -> None:
    """A resized input keeps the options' output size and the input's channels."""
    rng = np.random.default_rng(34)
    img = rng.standard_normal((1, 40, 56, 8)).astype(F32)
    m = BILINEAR_MATRICES["rotate-zoom"].reshape(1, 4, 4)
    model = ttb_model((1, 48, 48, 8), ttb_options)
    it = Interpreter(model_content=model, backend=backend)
    it.resize_tensor_input(0, list(img.shape))
    it.allocate_tensors()
    it.set_tensor(0, img)
    it.set_tensor(1, m)
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    assert_same(out, ref_transform_tensor_bilinear(img, m, 16, 16))


def test_transform_tensor_bilinear_compiled_is_the_numpy_kernel_bit_for_bit(ttb_options: bytes, monkeypatch) -> None:
    """The compiled sampler (loops.c) makes the numpy kernel's every bit, NaN and inf included:
    non-finite matrix entries, inf/NaN pixels, points exactly on the edges."""
    rng = np.random.default_rng(36)
    img = rng.standard_normal((1, 48, 48, 32)).astype(F32)
    img[0, 47, ::3] = np.inf
    img[0, ::5, 47] = np.nan
    img[0, 10, 10] = -np.inf
    mats = [m.reshape(1, 4, 4) for m in BILINEAR_MATRICES.values()]
    for k, bad in enumerate((np.nan, np.inf, -np.inf)):
        m = BILINEAR_MATRICES["affine"].copy()
        m[k % 2, (0, 2, 3)[k]] = bad
        mats.append(m.reshape(1, 4, 4))
    model = ttb_model(img.shape, ttb_options)
    compiled, reference = compiled_and_numpy(model, [[img, m] for m in mats], monkeypatch)
    assert any(np.isnan(r).any() for r in reference) and any(np.isinf(r).any() for r in reference)
    for m, out, ref in zip(mats, compiled, reference, strict=True):
        np.testing.assert_array_equal(out.view(np.uint32), ref.view(np.uint32), err_msg=str(m[0]))


def compiled_and_numpy(model: bytes, cases: list[list[np.ndarray]], monkeypatch) -> tuple[list, list]:
    """The first output of ``model`` on each case on the cpu backend with its compiled loops,
    and with numpy only (``GPULITE_CPU_JIT=0``); skips where the loops are unavailable."""
    from gpulite.backends.cpu import jit
    from gpulite.environment import env

    if not jit.available():
        pytest.skip(f"compiled loops unavailable: {jit.status()}")
    compiled = [run_gpulite(model, inputs, "cpu")[0] for inputs in cases]
    monkeypatch.setenv("GPULITE_CPU_JIT", "0")
    env().reset()
    try:
        reference = [run_gpulite(model, inputs, "cpu")[0] for inputs in cases]
    finally:
        monkeypatch.delenv("GPULITE_CPU_JIT")
        env().reset()
    return compiled, reference


def assert_same_bits(out: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Every bit equal, but NaN's sign and payload (C's and Python's NaNs may differ there)."""
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(out), nan, err_msg=what)
    np.testing.assert_array_equal(out[~nan].view(np.uint32), ref[~nan].view(np.uint32), err_msg=what)


def test_landmarks_to_transform_matrix_compiled_is_the_numpy_kernel_bit_for_bit(l2tm_options: list[bytes],
                                                                                  monkeypatch) -> None:
    """The compiled Landmarks2TransformMatrix (loops.c) makes the numpy kernel's every bit: the
    face model's three option sets on many landmark clouds, plus NaN and inf landmarks (in the
    subset, at the rotation landmarks) and a vertical left->right direction."""
    rng = np.random.default_rng(37)
    for options in l2tm_options:
        clouds = [face_like_landmarks(rng, tilt=t) for t in rng.uniform(-3.2, 3.2, 12)]
        opts = flexbuffers.Loads(options)
        left, right, inner = opts["left_rotation_idx"], opts["right_rotation_idx"], opts["subset_idxs"][3]
        for idx, bad in ((inner, np.nan), (inner, np.inf), (left, np.nan), (right, -np.inf)):
            lm = face_like_landmarks(rng)
            lm[0, idx, 1] = bad
            clouds.append(lm)
        vertical = face_like_landmarks(rng)
        vertical[0, right, 0] = vertical[0, left, 0]
        clouds.append(vertical)
        compiled, reference = compiled_and_numpy(l2tm_model(468, options), [[lm] for lm in clouds], monkeypatch)
        assert all(np.isfinite(r).all() for r in reference[:12]) and all(np.isnan(r).any() for r in reference[12:16])
        for k, (out, ref) in enumerate(zip(compiled, reference, strict=True)):
            assert_same_bits(out, ref, f"cloud {k}")


def test_transform_landmarks_compiled_is_the_numpy_kernel_bit_for_bit(monkeypatch) -> None:
    """The compiled TransformLandmarks (loops.c) makes the numpy kernel's every bit, 2-D and
    3-D landmarks, non-finite matrix entries (the z column's NaN included) and landmarks."""
    rng = np.random.default_rng(42)
    mats = [BILINEAR_MATRICES[k].reshape(1, 4, 4) for k in sorted(BILINEAR_MATRICES)]
    for k, bad in enumerate((np.nan, np.inf, -np.inf)):
        m = BILINEAR_MATRICES["affine"].copy()
        m[k % 2, (0, 2, 3)[k]] = bad
        mats.append(m.reshape(1, 4, 4))
    for shape in ((1, 80, 2), (1, 5, 2), (1, 33, 3)):
        lm = rng.uniform(-4, 20, shape).astype(F32)
        lm[0, 1, 0], lm[0, 2, 1] = np.inf, np.nan
        compiled, reference = compiled_and_numpy(tl_model(shape), [[lm, m] for m in mats], monkeypatch)
        for m, out, ref in zip(mats, compiled, reference, strict=True):
            assert_same_bits(out, ref, f"{shape} {m[0]}")


def test_landmarks_matrix_then_sampler(l2tm_options: list[bytes], ttb_options: bytes, backend: str) -> None:
    """The face model's pattern -- Landmarks2TransformMatrix feeding TransformTensorBilinear --
    as one two-op model against the two references chained."""
    mb = ModelBuilder()
    lm_t = mb.input("landmarks", (1, 468, 3), F32)
    img_t = mb.input("features", (1, 48, 48, 32), F32)
    m_t = mb.tensor("matrix", (1, 4, 4), F32)
    y_t = mb.tensor("crop", (1, 16, 16, 32), F32)
    mb.custom_op("Landmarks2TransformMatrix", [lm_t], [m_t], custom_options=l2tm_options[1], op_version=2)
    mb.custom_op("TransformTensorBilinear", [img_t, m_t], [y_t], custom_options=ttb_options, op_version=2)
    mb.output(y_t)
    mb.output(m_t)  # read too: each op is checked against its own reference
    rng = np.random.default_rng(35)
    lm = face_like_landmarks(rng, tilt=-0.4)
    img = rng.standard_normal((1, 48, 48, 32)).astype(F32)
    out, matrix = run_gpulite(mb.build(), [lm, img], backend)
    # the matrix within the Landmarks2TransformMatrix cases' tolerance of the float64 reference
    assert_same(matrix, ref_landmarks_to_transform_matrix(lm, flexbuffers.Loads(l2tm_options[1])))
    # the crop: the reference sampler on that matrix, within the ulps float32 and contraction
    # allow; a 1e-6 difference of the matrix moves 48x48 samples by up to ~1e-4, which one
    # tolerance over the chained outputs (2.9e-5 here) passed or failed by luck
    ref = ref_transform_tensor_bilinear(img, matrix, 16, 16)
    assert np.count_nonzero(ref) > ref.size // 2
    assert_within_contraction(out, ref, img, matrix)


# =====================================================================================
# TransformLandmarks
# =====================================================================================
@pytest.mark.parametrize("shape", [(1, 80, 2), (1, 71, 2), (1, 5, 2), (1, 33, 3)])
def test_transform_landmarks(shape, backend: str) -> None:
    """The face model's landmark shapes (and a 3-D case) vs the per-landmark loop reference."""
    rng = np.random.default_rng(40 + shape[1])
    lm = rng.uniform(0, 16, shape).astype(F32)
    m = BILINEAR_MATRICES["from-landmarks"].reshape(1, 4, 4).copy()
    m[0, :2, 2] = rng.uniform(-2, 2, 2)  # z column: multiplied by 0, must not leak in
    (out,) = run_gpulite(tl_model(shape), [lm, m], backend)
    assert_same(out, ref_transform_landmarks(lm, m))


def test_transform_landmarks_resized(backend: str) -> None:
    rng = np.random.default_rng(41)
    lm = rng.uniform(0, 16, (1, 9, 3)).astype(F32)
    m = BILINEAR_MATRICES["affine"].reshape(1, 4, 4)
    it = Interpreter(model_content=tl_model((1, 5, 3)), backend=backend)
    it.resize_tensor_input(0, [1, 9, 3])
    it.allocate_tensors()
    it.set_tensor(0, lm)
    it.set_tensor(1, m)
    it.invoke()
    assert_same(it.get_tensor(it.get_output_details()[0]["index"]), ref_transform_landmarks(lm, m))


# =====================================================================================
# Versions, kernels on the real model
# =====================================================================================
def test_version_1_is_refused(l2tm_options: list[bytes], ttb_options: bytes) -> None:
    """MediaPipe's CPU resolver registers only version 2; version 1 fails at allocate_tensors."""
    models = {
        "Landmarks2TransformMatrix": l2tm_model(468, l2tm_options[0], version=1),
        "TransformTensorBilinear": ttb_model((1, 48, 48, 4), ttb_options, version=1),
        "TransformLandmarks": tl_model((1, 5, 2), version=1),
    }
    for op, model in models.items():
        it = Interpreter(model_content=model)
        with pytest.raises(UnsupportedOpError, match="version 1") as e:
            it.allocate_tensors()
        assert e.value.op == op


def test_face_model_finds_kernels_for_mediapipe_ops() -> None:
    """face_landmark_with_attention: allocate_tensors finds kernels for the three MediaPipe ops
    (it may still stop at an op others are writing, never at one of these), and each of the
    model's 11 such nodes compiles and runs on the real graph, matching the references."""
    it = Interpreter(model_path=str(model_path(FACE)))
    try:
        it.allocate_tensors()
    except UnsupportedOpError as e:
        assert e.op not in MEDIAPIPE_OPS, str(e)
    for op in MEDIAPIPE_OPS:
        assert get_kernel(op, "cpu") is not None, op
    g = it.graph
    ours = [n for n in g.nodes if n.op in MEDIAPIPE_OPS]
    assert sorted(n.op for n in ours) == sorted(
        ["Landmarks2TransformMatrix"] * 3 + ["TransformTensorBilinear"] * 3 + ["TransformLandmarks"] * 5)
    rng = np.random.default_rng(50)
    arrays = {}
    for t in g.tensors:
        arrays[t.index] = t.const if t.is_const else np.zeros(t.shape, t.dtype)
    for n in ours:  # node order: matrices first, then the samplers that read them
        for i in n.inputs:
            t = g.tensors[i]
            if t.is_const or (n.op == "TransformTensorBilinear" and i == n.inputs[1]):
                continue
            arrays[i][...] = (face_like_landmarks(rng) if t.shape == (1, 468, 3)
                              else rng.uniform(0, 16, t.shape).astype(t.dtype))
        run = get_kernel(n.op, "cpu")(n, CpuContext(g, n, arrays, 1))
        run()
        out, ins = arrays[n.outputs[0]], [arrays[i] for i in n.inputs]
        if n.op == "Landmarks2TransformMatrix":
            ref = ref_landmarks_to_transform_matrix(ins[0], flexbuffers.Loads(bytes(n.custom_options)))
        elif n.op == "TransformTensorBilinear":
            ref = ref_transform_tensor_bilinear(ins[0], ins[1], 16, 16)
            assert np.count_nonzero(ref) > 0
        else:
            ref = ref_transform_landmarks(ins[0], ins[1])
        assert_same(out, ref, what=f"node {n.index} ({n.op})")


# =====================================================================================
# Custom-options decoding
# =====================================================================================
def test_decode_real_options(l2tm_options: list[bytes], ttb_options: bytes) -> None:
    """The face model's blobs decode to the values their FlexBuffers hold."""
    first = co.decode_landmarks_to_transform_matrix(l2tm_options[0])
    assert (first.left_rotation_idx, first.right_rotation_idx) == (61, 291)
    assert (first.output_height, first.output_width, first.scale_x, first.scale_y) == (16, 16, 1.5, 1.5)
    assert first.target_rotation_radians == 0.0
    assert len(first.subset_idxs) == 80 and first.subset_idxs[:4] == (61, 146, 91, 181)
    eyes = [co.decode_landmarks_to_transform_matrix(b) for b in l2tm_options[1:]]
    assert [(e.left_rotation_idx, e.right_rotation_idx, len(e.subset_idxs)) for e in eyes] == [
        (33, 133, 71), (362, 263, 71)]
    assert co.decode_transform_tensor_bilinear(ttb_options) == co.TransformTensorBilinearOptions(16, 16)
    assert decode_custom_options(Op.TransformLandmarks, 2, None) == co.TransformLandmarksOptions()


GOOD_L2TM = {"left_rotation_idx": 0, "right_rotation_idx": 1, "subset_idxs": [0, 1, 2],
             "output_height": 8, "output_width": 8, "scale_x": 1.5, "scale_y": 1.5,
             "target_rotation_radians": 0.0}


@pytest.mark.parametrize("change, message", [
    ({"output_height": 0}, "'output_height' >= 1"),
    ({"scale_x": 0.0}, "'scale_x' > 0"),
    ({"scale_y": float("nan")}, "'scale_y' to be finite"),
    ({"left_rotation_idx": -1}, "'left_rotation_idx' >= 0"),
    ({"subset_idxs": []}, "at least one index"),
    ({"subset_idxs": [1, -2]}, "non-negative int32"),
    ({"subset_idxs": [1.5]}, "vector of ints"),
    ({"output_width": 8.0}, "'output_width' to be an int"),
    ({"scale_x": "big"}, "'scale_x' to be a float"),
    ({"right_rotation_idx": None}, "'right_rotation_idx' to be an int"),
])
def test_decode_landmarks_options_rejects(change: dict, message: str) -> None:
    opts = {**GOOD_L2TM, **change}
    with pytest.raises(ModelError, match=message):
        co.decode_landmarks_to_transform_matrix(flexbuffers.Dumps(opts))


@pytest.mark.parametrize("missing", sorted(set(GOOD_L2TM) - {"target_rotation_radians"}))
def test_decode_landmarks_options_missing_key(missing: str) -> None:
    opts = {k: v for k, v in GOOD_L2TM.items() if k != missing}
    with pytest.raises(ModelError, match=f"expected key '{missing}'"):
        co.decode_landmarks_to_transform_matrix(flexbuffers.Dumps(opts))


@pytest.mark.parametrize("blob, message", [
    (None, "got no custom options"),
    (b"", "got no custom options"),
    (b"\x01", "do not decode"),
    (flexbuffers.Dumps([1, 2]), "got a list"),
    (flexbuffers.Dumps({"output_height": 16}), "expected key 'output_width'"),
    (flexbuffers.Dumps({"output_height": 16, "output_width": -3}), "'output_width' >= 1"),
    (flexbuffers.Dumps({"output_height": 1 << 40, "output_width": 4}), "fit in int32"),
])
def test_decode_bilinear_options_rejects(blob, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        co.decode_transform_tensor_bilinear(blob)


@pytest.mark.parametrize("blob, message", [
    (None, "got 0 bytes"),
    (b"\x01\x00\x00\x00\x02\x00\x00\x00", "got 8 bytes"),
    (struct.pack("<3i", 0, 2, 2), "got 0"),
    (struct.pack("<3i", 3, 2, 2), "got 3"),
    (struct.pack("<3i", 1, 0, 2), "stride_width=0"),
    (struct.pack("<3i", 2, 2, -1), "stride_height=-1"),
])
def test_decode_transpose_conv_options_rejects(blob, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        co.decode_transpose_conv_bias(blob)


def test_decode_transpose_conv_options_accepts_longer_struct() -> None:
    """Newer TfLiteTransposeConvParams append fields; MediaPipe reads only the first three."""
    blob = struct.pack("<5i", 2, 3, 1, 1, 0)
    assert co.decode_transpose_conv_bias(blob) == co.TransposeConvBiasOptions("VALID", 3, 1)


def test_decode_ops_without_decoder() -> None:
    """A known op without a decoder, an unknown custom op, and a version whose options MediaPipe
    does not parse all keep node.options None (their kernels, if any, read the bytes or refuse)."""
    assert decode_custom_options(Op.MaxUnpooling2D, 1, b"\x01") is None
    assert decode_custom_options("NoSuchOp", 1, b"\x01") is None
    assert decode_custom_options(Op.TransformTensorBilinear, 1, b"\x01") is None


def test_decode_mutated_options_only_model_errors(l2tm_options: list[bytes], ttb_options: bytes) -> None:
    """Byte flips and truncations of the real blobs: every outcome is a decoded dataclass or a
    ModelError, never another exception."""
    rng = np.random.default_rng(60)
    seeds = [(co.decode_landmarks_to_transform_matrix, l2tm_options[0]),
             (co.decode_transform_tensor_bilinear, ttb_options)]
    outcomes = {"ok": 0, "ModelError": 0}
    for decode, blob in seeds:
        for k in range(600):
            b = bytearray(blob)
            if k % 3 == 0:
                b = b[: int(rng.integers(0, len(b)))]
            else:
                for _ in range(int(rng.integers(1, 4))):
                    b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
            try:
                decode(bytes(b))
                outcomes["ok"] += 1
            except ModelError:
                outcomes["ModelError"] += 1
    assert outcomes["ModelError"] > 0 and outcomes["ok"] > 0, outcomes


def test_malformed_options_fail_at_load(ttb_options: bytes) -> None:
    """A broken blob in a model is a ModelError naming the operator and op when the model loads."""
    with pytest.raises(ModelError, match=r"operator 0 \(TransformTensorBilinear\): TransformTensorBilinear custom "
                                         r"options: expected a FlexBuffer map"):
        Interpreter(model_content=ttb_model((1, 48, 48, 4), ttb_options[:-3]))


def test_custom_options_decoded_once_at_load(ttb_options: bytes, l2tm_options: list[bytes]) -> None:
    """The reader puts each MediaPipe op's decoded options on the node; kernels only read them."""
    node = Interpreter(model_content=ttb_model((1, 48, 48, 4), ttb_options)).graph.nodes[0]
    assert node.op is Op.TransformTensorBilinear and node.options == co.TransformTensorBilinearOptions(16, 16)
    node = Interpreter(model_content=l2tm_model(468, l2tm_options[1])).graph.nodes[0]
    assert node.options == co.decode_landmarks_to_transform_matrix(l2tm_options[1])
    # Version 1 is not decoded (MediaPipe's resolver has no version-1 parser): it loads, and
    # allocate_tensors refuses it (test_version_1_is_refused).
    assert Interpreter(model_content=l2tm_model(468, b"junk", version=1)).graph.nodes[0].options is None
