"""WebGPU kernels for converter ops whose op-suite case lives with their CPU kernel elsewhere:
checked here against LiteRT directly, all nodes on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import check_gpu, require_adapter

require_adapter()


@pytest.mark.parametrize("shape", [(2, 5), (1, 3, 4, 7)], ids=["2d", "4d"])
def test_l2_normalization(shape) -> None:
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    y = mb.tensor("y", shape, np.float32)
    mb.op("L2_NORMALIZATION", [x], [y])
    mb.output(y)
    xs = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    rows = xs.reshape(-1, shape[-1])
    rows[0] = 0  # a zero row: divided by LiteRT's epsilon, not by 0
    rows[-1] *= 1e-8  # a tiny row: below the epsilon too
    check_gpu(mb.build(), [xs])


CAST_EDGES = {  # values the op suite's +-100 do not reach
    "float32-int64-wide": ("float32", "int64", [3e9, -3e9, 1.5e12, -2.5, 2.0**31, -(2.0**31), 7.9e18, -7.9e18]),
    "int32-int64-extremes": ("int32", "int64", [-1, 2**31 - 1, -(2**31), 0]),
    "int16-float32-extremes": ("int16", "float32", [-32768, 32767, -1, 5]),
}


@pytest.mark.parametrize("case", list(CAST_EDGES))
def test_cast_edges(case: str) -> None:
    src, dst, vals = CAST_EDGES[case]
    x = np.array(vals, dtype=src)
    mb = ModelBuilder()
    i = mb.input("x", x.shape, src)
    o = mb.tensor("y", x.shape, dst)
    mb.op("CAST", [i], [o])
    mb.output(o)
    check_gpu(mb.build(), [x])


RFFTS = {  # input shape, fft_length
    "frames": ((1, 3, 1, 256), (1, 256)),
    "2d-padded-cropped": ((2, 3, 5), (4, 8)),
    "wide": ((1, 2, 40), (4, 64)),
}


def _rfft_model(shape, length, then_abs: bool) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    out_shape = (*shape[:-2], length[0], length[1] // 2 + 1)
    z = mb.tensor("z", out_shape, np.complex64)
    mb.op("RFFT2D", [x, mb.const("n", np.array(length, np.int32))], [z])
    if not then_abs:
        mb.output(z)
        return mb.build()
    a = mb.tensor("a", out_shape, np.float32)
    mb.op("COMPLEX_ABS", [z], [a])
    mb.output(a)
    return mb.build()


@pytest.mark.parametrize("case", list(RFFTS))
def test_rfft2d_and_complex_abs(case: str) -> None:
    shape, length = RFFTS[case]
    xs = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    check_gpu(_rfft_model(shape, length, then_abs=True), [xs])
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter
    from tests.webgpu.support import gpu_only, run

    m = _rfft_model(shape, length, then_abs=False)
    it = Interpreter(model_content=m, backend="webgpu")
    got = run(it, [xs])[0]
    gpu_only(it.get_plan())
    want = run(LiteRT(model_content=m), [xs])[0]
    assert got.dtype == want.dtype == np.complex64 and got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max()))


@pytest.mark.parametrize("opts", [{"radius": 2, "bias": 1.0, "alpha": 1e-4, "beta": 0.75},
                                  {"radius": 5, "bias": 2.0, "alpha": 0.5, "beta": 0.5}], ids=["alexnet", "wide"])
def test_local_response_normalization(opts) -> None:
    shape = (1, 3, 4, 7)
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    y = mb.tensor("y", shape, np.float32)
    mb.op("LOCAL_RESPONSE_NORMALIZATION", [x], [y], **opts)
    mb.output(y)
    check_gpu(mb.build(), [np.random.default_rng(2).standard_normal(shape).astype(np.float32) * 3])
