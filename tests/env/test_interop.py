"""Eager ops and models together: GPU pre-processing feeding an Interpreter without a readback."""

from __future__ import annotations

import numpy as np

import gpulite
from gpulite import ops, runtime
from tests.env.conftest import use_backend


def test_gpu_preprocessing_feeds_a_model_through_bind_input_without_a_readback():
    use_backend("webgpu")
    frame = np.random.default_rng(3).uniform(0, 255, (1, 96, 112, 3)).astype(np.float32)
    it = gpulite.Interpreter("face_detection_short_range", backend="webgpu")
    it.allocate_tensors()
    index = it.get_input_details()[0]["index"]
    exe = runtime.eager_executor()
    reads = exe.readbacks
    with gpulite.tidy():
        x = ops.resize_bilinear(gpulite.tensor(frame), (128, 128), half_pixel_centers=True)
        x = ops.sub(ops.div(x, 127.5), 1.0)
        it.bind_input(index, x.gpu_buffer)  # same device: the shared WebGPU device
        it.invoke()
        bound = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        assert exe.readbacks == reads  # the pre-processed frame never came back to the host
        it.bind_input(index, None)  # unbind before the tidy gives the buffer back to the pool
        it.set_tensor(index, x.numpy())
    it.invoke()
    for a, d in zip(bound, it.get_output_details(), strict=True):
        np.testing.assert_array_equal(a, it.get_tensor(d["index"]))
