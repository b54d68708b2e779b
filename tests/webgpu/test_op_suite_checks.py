"""The op suite's WebGPU placement check (tests/ops/harness.py) and its gap table."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import require_adapter

require_adapter()

F32 = np.float32
SHAPE = (1, 4, 4, 8)


def _add_model() -> tuple[bytes, list[np.ndarray]]:
    mb = ModelBuilder()
    a, b = mb.input("a", SHAPE, F32), mb.input("b", SHAPE, F32)
    y = mb.tensor("y", SHAPE, F32)
    mb.op("ADD", [a, b], [y])
    mb.output(y)
    rng = np.random.default_rng(1)
    return mb.build(), [rng.uniform(-4, 4, SHAPE).astype(F32) for _ in range(2)]


def test_op_suite_placement_check_catches_cpu_fallback():
    from gpulite import Interpreter
    from tests.ops.harness import NotOnGpuError, check_watched, watch_webgpu
    from tests.webgpu.support import run

    model, feeds = _add_model()
    with watch_webgpu() as seen:
        run(Interpreter(model_content=model, backend="webgpu"), feeds)
    check_watched(seen)  # all on the GPU: passes
    with watch_webgpu() as seen:  # an interpreter the test builds itself is seen as well
        run(Interpreter(model_content=model, backend="webgpu", cpu_ops=["ADD"]), feeds)
    with pytest.raises(NotOnGpuError, match=r"ADD.*forced onto the cpu"):
        check_watched(seen)


def test_gpu_gap_patterns():
    from tests.ops.expected_failures import GPU_GAPS, gpu_gap

    assert gpu_gap("test_hybrid.py::test_hybrid_conv2d[k1-s1-valid-per-tensor]")[0] == \
        "test_hybrid.py::test_hybrid_conv2d[*]"
    assert gpu_gap("test_conv.py::test_conv2d_quantized[k1-s1-valid-int8-per-tensor]") is None  # exact on the GPU
    assert gpu_gap("test_conv.py::test_conv2d_float[k1-s1-valid]") is None
    assert gpu_gap("test_elementwise.py::test_binary_integer[int64-ADD]") is not None
    assert gpu_gap("test_elementwise.py::test_binary_integer[int32-ADD]") is None
    assert gpu_gap("test_activations.py::test_softmax[1x10-1.0]") is None  # the float one is not a gap
    assert all(why for _, why in GPU_GAPS)
