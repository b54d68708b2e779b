"""Pose's heatmap refinement on webgpu: each landmark's window summed on the GPU
(``heatmap_windows.wgsl``) in the submit that reads the landmarks, refined on the host from
those sums, equals RefineLandmarksFromHeatmap on the read-back heatmap within float32 rounding:
on the pose model's real outputs and on edge cases (windows cut by the borders, cells just past
them, low confidence, saturated logits, NaN), and the GPU's cells must be the landmarks'."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.pipeline.calculators.refine_landmarks_from_heatmap import (
    HeatmapWindows,
    RefineLandmarksFromHeatmapOptions,
    refine_from_windows,
    refine_landmarks,
)
from gpulite.pipeline.calculators.tensors_to_landmarks import TensorsToLandmarksOptions, tensor_to_landmarks
from gpulite.pipeline.calculators.types import PipelineValueError
from tests.webgpu.support import adapter_problem


@pytest.fixture(scope="module")
def gdev():
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    from gpulite.backends.webgpu.pipeline import shared_device

    return shared_device()


def upload(gdev, a: np.ndarray):
    from gpulite.backends.webgpu.pipeline import DeviceTensor
    from gpulite.backends.webgpu.pipeline.common import STORAGE_OUT, write_padded

    buf = gdev.device.create_buffer(size=max(a.nbytes, 4), usage=STORAGE_OUT)
    write_padded(gdev, buf, a.astype(np.float32))
    return DeviceTensor(gdev, buf, 0, a.shape)


def gpu_windows(gdev, landmarks, heatmap, input_size: int, kernel_size: int) -> HeatmapWindows:
    """The window sums of ``heatmap`` (a (1, H, W, N) GPU tensor) around ``landmarks`` (N x dims raw)."""
    from gpulite.backends.webgpu.pipeline import copy_and_read
    from gpulite.backends.webgpu.pipeline.heatmap import HeatmapWindowsGpu

    _, h, w, n = heatmap.shape
    win = HeatmapWindowsGpu(gdev, n, int(np.prod(landmarks.shape)) // n, w, h, kernel_size,
                            (w / input_size, h / input_size))
    _, arrays = copy_and_read(gdev, [], [], "test_heatmap_windows", encode=lambda enc: [win.encode(enc, landmarks,
                                                                                                       heatmap)])
    return HeatmapWindows(arrays[0], kernel_size, (w, h))


def decode(raw: np.ndarray, n: int, input_size: int):
    return tensor_to_landmarks(raw, TensorsToLandmarksOptions(num_landmarks=n, input_image_width=input_size,
                                                              input_image_height=input_size,
                                                              visibility_activation="sigmoid",
                                                              presence_activation="sigmoid"))


def values(lms) -> np.ndarray:
    return np.array([(p.x, p.y, p.z, p.visibility, p.presence) for p in lms], np.float64)


def moved(a, b) -> np.ndarray:
    """Per landmark: does ``a`` differ from ``b`` anywhere (NaN equal to NaN)."""
    x, y = values(a), values(b)
    return ~np.all((x == y) | (np.isnan(x) & np.isnan(y)), axis=1)


def assert_same(gpu, host, raw) -> None:
    """Equal within float32 rounding; landmarks the host leaves alone are left alone exactly."""
    np.testing.assert_allclose(values(gpu), values(host), rtol=0, atol=2e-6)
    np.testing.assert_array_equal(moved(gpu, raw), moved(host, raw))


def test_window_sums_on_the_pose_models_real_outputs_match_the_host_refinement(gdev):
    import cv2

    from gpulite import zoo
    from gpulite.interpreter import Interpreter
    from tests.solutions.video import load_image

    it = Interpreter(model_path=str(zoo.resolve("pose_landmark_full")), backend="webgpu", device=gdev,
                     outputs_on_gpu=True)
    it.allocate_tensors()
    image = cv2.resize(load_image(), (256, 256), interpolation=cv2.INTER_AREA).astype(np.float32) / 255
    it.set_tensor(it.get_input_details()[0]["index"], image[None])
    it.invoke()
    outputs = [d["index"] for d in it.get_output_details()]
    lm_gpu, hm_gpu = it.get_output_gpu(outputs[0]), it.get_output_gpu(outputs[3])
    assert tuple(hm_gpu.shape) == (1, 64, 64, 39)
    raw = decode(lm_gpu.data_sync(), 39, 256)
    heatmap = hm_gpu.data_sync()
    count = 0
    for k in (9, 7, 1):
        opts = RefineLandmarksFromHeatmapOptions(kernel_size=k, refine_presence=True, refine_visibility=True)
        host = refine_landmarks(raw, heatmap, opts)
        gpu = refine_from_windows(raw, gpu_windows(gdev, lm_gpu, hm_gpu, 256, k), opts)
        assert_same(gpu, host, raw)
        count += moved(host, raw).sum()
    assert count > 20                                              # the refinement did move landmarks
    it.close()


def test_window_sums_at_the_borders_low_confidence_and_saturation_match_the_host(gdev):
    n, size, cells = 9, 64, 16                                     # 64-pixel input, 16x16 heatmap
    xy = np.array([[0.0, 0.0],          # top-left cell: the window cut on two sides
                   [63.99, 63.99],      # bottom-right cell
                   [-0.5, 30.0],        # just left of the heatmap: trunc(-0.125) = 0, column 0
                   [-4.0, 30.0],        # column -1: off the heatmap, left alone
                   [64.0, 10.0],        # column 16: off
                   [32.0, 32.0],        # never confident (logits -1): not moved, presence capped
                   [np.nan, 5.0],       # NaN: off
                   [10.0, 20.0],        # saturated logits (+-100)
                   [40.0, 2.0]],        # near the top edge, random logits
                  np.float32)
    raw = np.concatenate([xy, np.full((n, 1), 0.25, np.float32), np.full((n, 2), 3.0, np.float32)], axis=1)
    rng = np.random.default_rng(21)
    hm = (rng.normal(0, 3, (1, cells, cells, n)) + 2).astype(np.float32)
    hm[..., 5] = -1.0
    hm[..., 7] = np.where(rng.random((1, cells, cells)) < 0.3, 100.0, -100.0)
    lm_t, hm_t = upload(gdev, raw.reshape(1, -1)), upload(gdev, hm)
    lms = decode(raw, n, size)
    for k in (5, 9, 31):
        for presence in (False, True):
            opts = RefineLandmarksFromHeatmapOptions(kernel_size=k, refine_presence=presence,
                                                     refine_visibility=not presence)
            host = refine_landmarks(lms, hm, opts)
            windows = gpu_windows(gdev, lm_t, hm_t, size, k)
            gpu = refine_from_windows(lms, windows, opts)
            assert_same(gpu, host, lms)
            m = moved(host, lms)
            assert m[[0, 1, 2, 7, 8]].all() and not m[[3, 4, 6]].any()
            assert (host[5].x, host[5].y) == (lms[5].x, lms[5].y)
            assert (host[5].presence != lms[5].presence) == presence   # capped to the best confidence
    with pytest.raises(PipelineValueError, match="kernel_size 7, but the GPU summed 5x5"):
        refine_from_windows(lms, gpu_windows(gdev, lm_t, hm_t, size, 5), RefineLandmarksFromHeatmapOptions(7))
    shifted = decode(raw + np.array([8, 0, 0, 0, 0], np.float32), n, size)  # other landmarks than the GPU's
    with pytest.raises(PipelineValueError, match="different tensors or input sizes"):
        refine_from_windows(shifted, gpu_windows(gdev, lm_t, hm_t, size, 5), RefineLandmarksFromHeatmapOptions(5))


@pytest.mark.parametrize("bad", [{"landmarks": 0, "heatmap": 3}, {"landmarks": 0, "heatmap": 0, "kernel_size": 9},
                                 {"landmarks": 0, "heatmap": 2, "kernel_size": 9}, {"landmarks": 0, "heatmap": 3,
                                                                                    "kernel_size": 0}])
def test_heatmap_windows_option_is_checked(bad):
    from gpulite.errors import GraphConfigError
    from gpulite.pipeline.calculators.inference import InferenceOptions
    from gpulite.pipeline.options import make_options

    with pytest.raises(GraphConfigError, match="heatmap_windows must be"):
        make_options(InferenceOptions, {"model": "m", "keep_on_gpu": [2], "heatmap_windows": bad}, "node 'x'")


def test_inference_reads_window_sums_in_place_of_the_heatmap_and_the_heatmap_where_sizes_round(gdev):
    """ModelRunner with heatmap_windows: output 3 comes as HeatmapWindows, read in the landmarks'
    submit, refining as the heatmap does; sizes that are not powers of two (the cell would round
    differently in float32) read the heatmap back instead; a bad output position is named."""
    import cv2

    from gpulite import zoo
    from gpulite.backends.webgpu.pipeline import transfer_stats
    from gpulite.pipeline.calculators.inference import ModelRunner
    from tests.solutions.video import load_image

    model = zoo.resolve("pose_landmark_full")
    windows = {"landmarks": 0, "heatmap": 3, "kernel_size": 9}
    image = cv2.resize(load_image(), (256, 256), interpolation=cv2.INTER_AREA).astype(np.float32)[None] / 255
    runner = ModelRunner(model, "webgpu", output_on_gpu=False, keep_on_gpu=(2,), heatmap_windows=windows)
    try:
        before = transfer_stats()
        outs = runner.run([image])
        after = transfer_stats()
        assert isinstance(outs[3], HeatmapWindows) and outs[3].size == (64, 64)
        assert after["bytes_read_back"] - before["bytes_read_back"] == (195 + 1 + 117 + 39 * 8) * 4
        runner._shapes[0] = (1, 192, 192, 3)                       # as if the input were 192x192
        assert runner._heatmap_windows(windows) is None
        runner._windows = None
        heatmap = runner.run([image])[3]
        assert isinstance(heatmap, np.ndarray) and heatmap.shape == (1, 64, 64, 39)
    finally:
        runner.close()
    lms = decode(outs[0], 39, 256)
    opts = RefineLandmarksFromHeatmapOptions(kernel_size=9)
    host = refine_landmarks(lms, heatmap, opts)
    assert_same(refine_from_windows(lms, outs[3], opts), host, lms)
    assert moved(host, lms).sum() > 10
    with pytest.raises(PipelineValueError, match="heatmap_windows names output 7"):
        ModelRunner(model, "webgpu", output_on_gpu=False, heatmap_windows={**windows, "heatmap": 7})
