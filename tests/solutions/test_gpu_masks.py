"""On webgpu a segmentation mask stays on the GPU until it is read: no readback per frame, and a
mask read late (after later frames) is still its own frame's."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tests.solutions.video import make_frames
from tests.webgpu.support import adapter_problem


def test_selfie_masks_come_back_only_when_read():
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    from gpulite.backends.webgpu.pipeline import transfer_stats
    from gpulite.solutions import SelfieSegmentation

    frames = make_frames(12)[::4]  # three frames, the photo in different places
    with SelfieSegmentation(backend="webgpu") as seg:
        results = []
        for f in frames:
            results.append(seg.process(f))
            assert seg.last_transfers["bytes_read_back"] == 0, seg.last_transfers
            assert seg.last_transfers["bytes_uploaded"] >= f.nbytes
        assert results[0].segmentation_mask_gpu.shape == (1, 256, 256, 1)
        before = transfer_stats()["bytes_read_back"]
        late = [r.segmentation_mask for r in reversed(results)][::-1]  # read last frame's first
        assert transfer_stats()["bytes_read_back"] - before == 3 * 256 * 256 * 4
        assert results[0].segmentation_mask is late[0]  # read once
        copy = pickle.loads(pickle.dumps(results[1]))  # pickles as the host mask
        np.testing.assert_array_equal(copy.segmentation_mask, late[1])
        assert copy.segmentation_mask_gpu is None
    with SelfieSegmentation(backend="cpu") as seg:
        eager = [seg.process(f) for f in frames]
    assert all(r.segmentation_mask_gpu is None for r in eager)
    for i, (a, r) in enumerate(zip(late, eager, strict=True)):
        assert a.shape == frames[i].shape[:2] and a.dtype == np.float32
        np.testing.assert_allclose(a, r.segmentation_mask, atol=1e-4, err_msg=f"frame {i}")
    assert np.abs(late[0] - late[2]).max() > 0.5  # the frames' masks differ, so a mix-up would show


def test_pose_mask_is_projected_and_smoothed_on_the_gpu_and_read_only_when_asked(monkeypatch):
    """Pose's mask: the model's segmentation stays on the GPU (keep_on_gpu), is projected onto the
    image (OpenCV's warpAffine fixed point) and smoothed there; a frame reads back only the
    landmark outputs (and the heatmap's window sums), and a mask read later is its own frame's,
    as the host path makes it."""
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    from gpulite.backends.webgpu.pipeline import transfer_stats
    from gpulite.pipeline.calculators.types import Segmentation
    from gpulite.solutions import Pose

    frames = make_frames(12)[::3]  # four frames: tracked, smoothing on
    h, w = frames[0].shape[:2]

    def run() -> tuple[list, list, list[int], int]:
        with Pose(enable_segmentation=True, backend="webgpu") as pose:
            results, read = [], []
            for f in frames:
                results.append(pose.process(f))
                read.append(pose.last_transfers["bytes_read_back"])
            before = transfer_stats()["bytes_read_back"]
            masks = [r.segmentation_mask for r in reversed(results)][::-1]
            return results, masks, read, transfer_stats()["bytes_read_back"] - before

    results, masks, read, late = run()
    assert all(r.pose_landmarks is not None for r in results)
    assert all(r.segmentation_mask_gpu.shape == (1, h, w, 1) for r in results)
    assert late == len(frames) * h * w * 4                    # each mask read once, when asked for
    # nor the 64x64x39 heatmap (624 KiB): of it only each landmark's window sums (39 x 32 bytes)
    # come back with the landmarks; a tracked frame reads 2.4 KiB, the first (detection) 3.9 KiB
    assert max(read) < 8 * 1024, read
    monkeypatch.setattr(Segmentation, "on_gpu", property(lambda self: False))  # the host path, as before
    host_results, host_masks, host_read, _ = run()
    # per frame, the host path read the model's 256x256 mask back as well; this one reads no mask
    assert [a - b for a, b in zip(host_read, read, strict=True)] == [256 * 256 * 4] * len(frames)
    for i, (a, b) in enumerate(zip(masks, host_masks, strict=True)):
        assert repr(results[i].pose_landmarks) == repr(host_results[i].pose_landmarks)
        d = np.abs(a - b)
        # OpenCV's 1/32-pixel positions, rounded in float32 here and in float64 there: a few pixels
        # take the neighbouring 1/32 step
        assert d.max() < 0.05 and (d > 1e-3).sum() <= 20 and d.mean() < 1e-5, (i, d.max(), (d > 1e-3).sum())


def test_mask_projection_and_smoothing_kernels_match_the_host_functions():
    """MaskGpu.project (sigmoid of logits, warped as cv2.warpAffine) and MaskGpu.smooth
    (smooth_mask at a ratio that blends: Pose's graph runs at MediaPipe's measured 0) against the
    host functions on the same inputs: a rotated, scaled region with smooth logits."""
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    from gpulite.backends.webgpu.pipeline import DeviceTensor, shared_device
    from gpulite.backends.webgpu.pipeline.common import STORAGE_OUT, write_padded
    from gpulite.backends.webgpu.pipeline.masks import MaskGpu
    from gpulite.pipeline.calculators.segmentation_projection import inverse_map, project_mask
    from gpulite.pipeline.calculators.segmentation_smoothing import smooth_mask
    from gpulite.pipeline.calculators.tensors_to_segmentation import TensorsToSegmentationOptions, tensor_to_mask
    from gpulite.pipeline.calculators.types import ImageTransform

    gdev = shared_device()

    def upload(a: np.ndarray) -> DeviceTensor:
        buf = gdev.device.create_buffer(size=a.nbytes, usage=STORAGE_OUT)
        write_padded(gdev, buf, a.astype(np.float32))
        return DeviceTensor(gdev, buf, 0, a.shape)

    yy, xx = np.mgrid[0:64, 0:64] / 63.0
    logits = (12 * np.sin(3 * xx + 2 * yy) * np.cos(4 * yy)).astype(np.float32).reshape(1, 64, 64, 1)
    c, s = np.cos(0.4), np.sin(0.4)  # region: 0.6 of the image, turned 0.4 rad, centred at (0.45, 0.55)
    m = np.array([[0.6 * c, -0.6 * s, 0.45 - 0.3 * c + 0.3 * s], [0.6 * s, 0.6 * c, 0.55 - 0.3 * s - 0.3 * c],
                  [0, 0, 1]])
    transform = ImageTransform(m, (0.0, 0.0, 0.0, 0.0), (160, 120), (64, 64))
    gpu = MaskGpu(gdev)
    projected = gpu.project(upload(logits), inverse_map((64, 64), transform, (160, 120)), 160, 120, sigmoid=True)
    sigmoid = TensorsToSegmentationOptions(activation="sigmoid")
    host = project_mask(tensor_to_mask(logits, None, sigmoid).mask, transform, (160, 120))
    got = projected.data_sync().reshape(120, 160)
    d = np.abs(got - host)
    assert host.max() > 0.9 and (host == 0).sum() > 1000          # the region and the zero border both show
    assert d.max() < 0.05 and (d > 1e-3).sum() <= 5, (d.max(), (d > 1e-3).sum())
    previous = np.clip(host[::-1] + 0.1, 0, 1)
    smoothed = gpu.smooth(upload(host.reshape(1, 120, 160, 1)), upload(previous.reshape(1, 120, 160, 1)), 0.7)
    want = smooth_mask(host, previous, 0.7)
    assert np.abs(want - host).max() > 0.1                        # the blend changes pixels
    np.testing.assert_allclose(smoothed.data_sync().reshape(120, 160), want, atol=2e-6)
