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
