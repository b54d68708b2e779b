"""The WebGPU kernels of MediaPipe's landmark ops against the CPU kernels, their executable
definition, on what the op suite (tests/ops/test_mediapipe_ops.py, which compares both
backends with independent references) does not reach: the half-pixel correction's rounding,
many random matrices, degenerate landmarks and non-finite matrices.

Every case asserts that the node ran on the GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from flatbuffers import flexbuffers

from tests.compare import assert_same
from tests.ops.test_mediapipe_ops import (
    assert_within_contraction,
    face_like_landmarks,
    l2tm_model,
    ref_transform_tensor_bilinear,
    tl_model,
    ttb_model,
)
from tests.webgpu.support import gpu_only, require_adapter, run

require_adapter()

from gpulite import Interpreter  # noqa: E402

F32 = np.float32
TTB_OPTIONS = flexbuffers.Dumps({"output_height": 16, "output_width": 16})  # the face model's


def _both(model: bytes, feeds) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(webgpu outputs, cpu outputs); asserts the webgpu plan is all-GPU."""
    gpu = Interpreter(model_content=model, backend="webgpu")
    out = run(gpu, feeds)
    gpu_only(gpu.get_plan())
    return out, run(Interpreter(model_content=model, backend="cpu"), feeds)


# -- TransformTensorBilinear --------------------------------------------------------------------
def test_half_pixel_correction_rounds_once_as_in_double():
    """x offset r3 + 0.5 r0 + 0.5 r1 - 0.5 with r0 = -1, r1 = 2^-19 + 2^-39, r3 = 24: exactly
    23 + 2^-20 + 2^-40, which rounds (once, as MediaPipe's double then float) to 23 + 2^-19, just
    past the last column of a 24-wide input, so output column 0 is outside (0) and column 1
    (22 + 2^-19) inside. Rounded step by step in float32 it becomes a tie that rounds to 23:
    column 0 would then sample the last column."""
    r1 = F32(2.0**-19 + 2.0**-39)
    m = np.array([[-1, r1, 0, 24], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], F32).reshape(1, 4, 4)
    stepwise = F32(F32(F32(F32(-0.5) + F32(r1 * F32(0.5))) - F32(0.5)) + F32(24))
    assert stepwise == 23 and F32(24 + (-0.5 + float(r1) * 0.5 - 0.5)) > 23  # the case is what it claims
    img = np.random.default_rng(0).uniform(1, 2, (1, 24, 24, 4)).astype(F32)  # no zeros to hide behind
    (out,), (cpu,) = _both(ttb_model(img.shape, TTB_OPTIONS), [img, m])
    # the edge decisions are the kernel's own rounding, bit-exact on every driver: column 0 outside
    assert not out[0, :, 0].any() and out[0, :, 1:].all() and not cpu[0, :, 0].any() and cpu[0, :, 1:].all()
    # the sampled values within the ulps float32 arithmetic and WGSL's a*b+c contraction allow
    # (NVIDIA's compiler fuses r1 * y into the sum, one ulp of 23 off in 225 of 1024 values)
    ref = ref_transform_tensor_bilinear(img, m, 16, 16)
    assert_within_contraction(out, ref, img, m)
    assert_within_contraction(cpu, ref, img, m)


def _random_affine(rng: np.random.Generator, k: int) -> np.ndarray:
    a = np.eye(4, dtype=F32)
    a[:2, :2] = rng.uniform(-3, 3, (2, 2)) * 10.0 ** rng.integers(-3, 1)
    a[:2, 2] = rng.uniform(-1, 1, 2)
    a[:2, 3] = rng.uniform(-10, 30, 2)
    if k % 3 == 0:  # dyadic entries: samples on exact pixel and edge coordinates
        a[:2] = np.round(a[:2] * 8) / 8
    return a.reshape(1, 4, 4)


def test_random_matrices_match_the_cpu_kernel():
    """150 random affine maps on a (24, 20) input: the same in/out-of-range decisions (the zero
    pattern) everywhere and values within the op tolerance (bit-identical on lavapipe)."""
    rng = np.random.default_rng(1)
    model = ttb_model((1, 24, 20, 4), TTB_OPTIONS)
    gpu, cpu = (Interpreter(model_content=model, backend=b) for b in ("webgpu", "cpu"))
    for it in (gpu, cpu):
        it.allocate_tensors()
    gpu_only(gpu.get_plan())
    out_index = gpu.get_output_details()[0]["index"]
    sampled = 0
    for k in range(150):
        img = rng.standard_normal((1, 24, 20, 4)).astype(F32) + 10  # nonzero: 0 only outside
        m = _random_affine(rng, k)
        outs = []
        for it in (gpu, cpu):
            it.set_tensor(0, img)
            it.set_tensor(1, m)
            it.invoke()
            outs.append(it.get_tensor(out_index))
        np.testing.assert_array_equal(outs[0] == 0, outs[1] == 0, err_msg=f"matrix {k}: edge decisions differ")
        assert_same(outs[0], outs[1], what=f"matrix {k}")
        sampled += int(np.count_nonzero(outs[1]))
    assert sampled > 150 * 16 * 16 * 4 // 10  # most cases sample something


# The CPU kernel's numpy warns on the non-finite arithmetic it (rightly) performs.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("bad", ["nan-offset", "nan-z", "inf-offset", "-inf-scale"])
def test_non_finite_matrix(bad):
    """NaN coordinates are 'inside' in MediaPipe's C++ and give NaN; infinite ones are outside."""
    m = np.array([[1.5, 0.2, 0, 3], [-0.1, 1.2, 0, 2], [0, 0, 1, 0], [0, 0, 0, 1]], F32)
    where, value = {"nan-offset": ((0, 3), np.nan), "nan-z": ((1, 2), np.nan), "inf-offset": ((1, 3), np.inf),
                    "-inf-scale": ((0, 0), -np.inf)}[bad]
    m[where] = value
    img = np.random.default_rng(2).standard_normal((1, 20, 20, 3)).astype(F32)
    (out,), (ref,) = _both(ttb_model(img.shape, TTB_OPTIONS), [img, m.reshape(1, 4, 4)])
    assert_same(out, ref)
    if bad.startswith("nan"):
        assert np.isnan(ref).any() and (ref == 0).any()  # NaN inside; the other axis still decides outside


# -- Landmarks2TransformMatrix ------------------------------------------------------------------
L2TM = {"left_rotation_idx": 3, "right_rotation_idx": 17, "subset_idxs": list(range(5, 35)),
        "output_height": 24, "output_width": 32, "scale_x": 1.5, "scale_y": 2.0}


def test_random_landmark_clouds_match_the_cpu_kernel():
    """100 clouds (any tilt, centre and spread, target rotations): within the op tolerance."""
    rng = np.random.default_rng(3)
    for k in range(100):
        opts = {**L2TM, "target_rotation_radians": float(rng.uniform(-4, 4)) if k % 2 else 0.0}
        lm = face_like_landmarks(rng, n=40, centre=tuple(rng.uniform(-50, 100, 2)), spread=float(rng.uniform(0.5, 40)),
                                 tilt=float(rng.uniform(-math.pi, math.pi)))
        (out,), (ref,) = _both(l2tm_model(40, flexbuffers.Dumps(opts)), [lm])
        assert_same(out, ref, what=f"cloud {k}")


@pytest.mark.parametrize("case", ["same-landmark", "coincident", "negative-zero-dx", "vertical"])
def test_degenerate_rotation_landmarks(case):
    """atan2 of a zero direction as C defines it: atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi."""
    rng = np.random.default_rng(4)
    lm = face_like_landmarks(rng, n=40)
    opts = dict(L2TM)
    if case == "same-landmark":
        opts["right_rotation_idx"] = opts["left_rotation_idx"]
    elif case == "coincident":
        lm[0, 17, :2] = lm[0, 3, :2]
    elif case == "negative-zero-dx":  # dx = -0.0 - 0.0 = -0.0: atan2(0, -0) = pi, a half turn
        lm[0, 3, :2] = [0.0, 5.0]
        lm[0, 17, :2] = [-0.0, 5.0]
    else:
        lm[0, 17, 0] = lm[0, 3, 0]
    (out,), (ref,) = _both(l2tm_model(40, flexbuffers.Dumps(opts)), [lm])
    assert_same(out, ref)
    if case == "negative-zero-dx":
        assert ref[0, 0, 0] < 0  # the crop's x axis points the other way: the half turn happened


# -- TransformLandmarks -------------------------------------------------------------------------
# The CPU kernel's numpy warns on the non-finite arithmetic it (rightly) performs.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("dims", [2, 3])
def test_transform_landmarks_non_finite_z_column(dims):
    """The z term m2 * 0 is NaN for a non-finite m2, as in the C++ (not folded to 0); a third
    coordinate is copied as it is."""
    rng = np.random.default_rng(5)
    lm = rng.uniform(0, 16, (1, 9, dims)).astype(F32)
    m = np.eye(4, dtype=F32)
    m[:2, :2] = rng.uniform(-2, 2, (2, 2))
    m[0, 2] = np.inf
    (out,), (ref,) = _both(tl_model(lm.shape), [lm, m.reshape(1, 4, 4)])
    assert np.isnan(ref[0, :, 0]).all() and np.isfinite(ref[0, :, 1]).all()
    assert_same(out, ref)
    if dims == 3:
        np.testing.assert_array_equal(out[0, :, 2], lm[0, :, 2])
