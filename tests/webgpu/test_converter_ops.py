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
