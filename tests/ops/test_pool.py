"""AVERAGE_POOL_2D and MAX_POOL_2D against LiteRT, float and int8/uint8."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.graph.shape_rules.conv import out_size
from gpulite.model.schema_gen import Padding
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op
from tests.ops.quant_ref import check_quantized

# id: (input NHWC, filter (h, w), stride (h, w), padding, activation)
CASES = {
    "f2-s2-valid": ((1, 8, 8, 5), (2, 2), (2, 2), "VALID", "NONE"),
    "f2-s2-same-odd": ((1, 7, 9, 5), (2, 2), (2, 2), "SAME", "NONE"),
    "f3-s2-same": ((1, 9, 10, 4), (3, 3), (2, 2), "SAME", "NONE"),
    "f3-s1-same-relu6": ((1, 6, 7, 3), (3, 3), (1, 1), "SAME", "RELU6"),
    "f5-s3-same-relu": ((1, 11, 10, 3), (5, 5), (3, 3), "SAME", "RELU"),
    "f3x2-s1x2-valid-relu_n1_to_1": ((2, 7, 8, 6), (3, 2), (1, 2), "VALID", "RELU_N1_TO_1"),
    "f3x2-s1-valid-relu": ((2, 7, 8, 5), (3, 2), (1, 1), "VALID", "RELU"),
    "global-valid": ((1, 6, 5, 7), (6, 5), (1, 1), "VALID", "NONE"),
    "f3-s1-same-tanh-ignored": ((1, 5, 5, 3), (3, 3), (1, 1), "SAME", "TANH"),
    # More than 16 taps: the separable (W then H) reduction and the global one.
    "f5-s1-same-separable": ((1, 12, 11, 4), (5, 5), (1, 1), "SAME", "RELU"),
    "f7x4-s2x3-valid-separable": ((2, 15, 14, 3), (7, 4), (2, 3), "VALID", "NONE"),
    "global-32x24": ((1, 32, 24, 16), (32, 24), (1, 1), "VALID", "NONE"),
    "global-128-selfie": ((1, 128, 128, 16), (128, 128), (128, 128), "VALID", "NONE"),
    # Global pools on the GPU's row reduction: batch, channels not a power of two, a window
    # larger than the image with SAME padding (still every pixel), a fused activation.
    "global-batch3-c37-relu": ((3, 19, 23, 37), (19, 23), (1, 1), "VALID", "RELU"),
    "global-same-window-over": ((2, 5, 4, 6), (6, 5), (6, 5), "SAME", "RELU6"),
    "global-1x1-image": ((2, 1, 1, 9), (1, 1), (1, 1), "VALID", "NONE"),
}


def _model(op: str, case, dtype, quant=None) -> bytes:
    shape, (fh, fw), (sh, sw), pad, act = case
    oh = out_size(Padding[pad], shape[1], fh, sh)
    ow = out_size(Padding[pad], shape[2], fw, sw)
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype, quant=quant)
    y = mb.tensor("y", (shape[0], oh, ow, shape[3]), dtype, quant=quant)
    mb.op(op, [x], [y], padding=pad, stride_h=sh, stride_w=sw, filter_height=fh, filter_width=fw,
          fused_activation_function=act)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pool_float(op: str, case: str, backend: str) -> None:
    x = (np.random.default_rng(20).standard_normal(CASES[case][0]) * 3).astype(np.float32)
    check_op(_model(op, CASES[case], np.float32), [x], backend)


QUANT = {"int8": (np.int8, (0.02, -6)), "uint8": (np.uint8, (0.02, 120))}


@pytest.mark.parametrize("case", ["f2-s2-valid", "f3-s2-same", "f3-s1-same-relu6", "f5-s3-same-relu",
                                  "f3x2-s1x2-valid-relu_n1_to_1", "global-valid", "f5-s1-same-separable",
                                  "f7x4-s2x3-valid-separable", "global-32x24"])
@pytest.mark.parametrize("dtype", QUANT)
@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pool_quantized(op: str, dtype: str, case: str, backend: str) -> None:
    dt, quant = QUANT[dtype]
    info = np.iinfo(dt)
    # Codes around the zero point (real sigma 0.6) so RELU_N1_TO_1 does not clamp nearly everything.
    noise = np.random.default_rng(21).normal(0, 30, CASES[case][0]).round()
    x = np.clip(quant[1] + noise, info.min, info.max).astype(dt)
    # Average pooling rounds half away from zero: exact against reference and default LiteRT.
    check_quantized(_model(op, CASES[case], dt, quant), [x], backend, int_tol=0)


def test_average_pool_rounds_half_away_from_zero(backend: str) -> None:
    """Window sums that are exact halves, of both signs, where round-half-even would differ."""
    x = np.array([[1, 2], [-1, -2], [3, 2], [-3, -2], [5, 6], [-5, -6], [7, 10], [-7, -10]], np.int8)
    x = x.reshape(1, 8, 2, 1)
    case = ((1, 8, 2, 1), (1, 2), (1, 2), "VALID", "NONE")
    model = _model("AVERAGE_POOL_2D", case, np.int8, (0.1, 0))
    out = check_quantized(model, [x], backend, int_tol=0, max_saturated=0.0)
    assert out.ravel().tolist() == [2, -2, 3, -3, 6, -6, 9, -9]


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pool_resized_input(op: str, backend: str) -> None:
    case = ((1, 8, 8, 3), (3, 3), (2, 2), "SAME", "NONE")
    x = np.random.default_rng(22).standard_normal((2, 11, 13, 3)).astype(np.float32)
    check_op(_model(op, case, np.float32), [x], backend)


# (input, kernel, stride, padding, activation): the 16x8 mode's int16 pooling (zero point 0)
INT16_POOLS = {
    "k2-s2-valid": ((1, 8, 8, 16), 2, 2, "VALID", "NONE"),
    "k3-s2-same-relu": ((2, 7, 7, 5), 3, 2, "SAME", "RELU"),
    "k3-s1-same-relu6": ((1, 9, 9, 3), 3, 1, "SAME", "RELU6"),
    "global": ((1, 6, 6, 8), 6, 1, "VALID", "NONE"),
}


@pytest.mark.parametrize("case", INT16_POOLS)
@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pool_int16(op: str, case: str, backend: str) -> None:
    shape, k, s, pad, act = INT16_POOLS[case]
    x = np.random.default_rng(26).integers(-20000, 20000, shape).astype(np.int16)
    oh = (shape[1] - k) // s + 1 if pad == "VALID" else -(-shape[1] // s)
    mb = ModelBuilder()
    xi = mb.input("x", shape, np.int16, quant=(0.001, 0))
    y = mb.tensor("y", (shape[0], oh, oh, shape[3]), np.int16, quant=(0.001, 0))
    mb.op(op, [xi], [y], padding=pad, stride_w=s, stride_h=s, filter_width=k, filter_height=k,
          fused_activation_function=act)
    mb.output(y)
    check_op(mb.build(), [x], backend)
