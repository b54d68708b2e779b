"""Grouped CONV_2D (filter with C/groups input channels, as PyTorch exports ResNeXt, RegNet and
ShuffleNet v1) against LiteRT, float and quantized."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.graph.shape_rules.conv import out_size
from gpulite.model.schema_gen import Padding
from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.ops.harness import check_op
from tests.ops.quant_ref import check_quantized

# id: (input NHWC, kernel (kh, kw), out channels, groups, stride (h, w), dilation (h, w), padding,
#      activation, bias)
CASES = {
    "g2-k3-s1-same-relu6": ((1, 9, 10, 8), (3, 3), 6, 2, (1, 1), (1, 1), "SAME", "RELU6", True),
    "g3-k3-s2-valid-relu": ((1, 9, 10, 9), (3, 3), 12, 3, (2, 2), (1, 1), "VALID", "RELU", True),
    "g4-k3-d2-same": ((1, 11, 9, 8), (3, 3), 8, 4, (1, 1), (2, 2), "SAME", "NONE", True),
    # ShuffleNet v1's pointwise group convs: the GEMM reads each group's channels in place
    "g8-1x1-shufflenet": ((1, 7, 7, 32), (1, 1), 48, 8, (1, 1), (1, 1), "VALID", "RELU", True),
    "g3-1x1-s2-same-batch2": ((2, 7, 7, 12), (1, 1), 9, 3, (2, 2), (1, 1), "SAME", "NONE", True),
    # RegNet / ResNeXt: 6 groups of 8 channels
    "g6-k3-regnet": ((1, 8, 8, 48), (3, 3), 48, 6, (1, 1), (1, 1), "SAME", "RELU", True),
    # group widths that are not multiples of 4 (3 in, 5 out; 2 in, 3 out)
    "g3-ci3-og5-relu_n1_to_1": ((1, 6, 6, 9), (3, 3), 15, 3, (1, 1), (1, 1), "SAME", "RELU_N1_TO_1", True),
    "g4-ci2-og3-k2-even": ((1, 6, 7, 8), (2, 2), 12, 4, (1, 1), (1, 1), "SAME", "NONE", True),
    "g2-nobias": ((1, 6, 6, 4), (3, 3), 4, 2, (1, 1), (1, 1), "SAME", "NONE", False),
    # as many groups as channels with two outputs each (a depthwise conv written as CONV_2D)
    "g12-ci1-og2": ((1, 6, 6, 12), (3, 3), 24, 12, (1, 1), (1, 1), "SAME", "RELU6", True),
    # big enough to be cut into chunks and threads
    "g4-chunked": ((1, 40, 48, 32), (3, 3), 32, 4, (1, 1), (1, 1), "SAME", "RELU", True),
    # wide groups (RegNetY-32GF's are 232 channels): 9 x 232 products per output exceed what one
    # GPU thread may sum (1,024), so the webgpu kernel splits them over 3 slices and adds
    "g2-wide-232-sliced": ((1, 5, 6, 464), (3, 3), 18, 2, (1, 1), (1, 1), "SAME", "RELU6", True),
}
QUANT_CASES = ["g2-k3-s1-same-relu6", "g3-k3-s2-valid-relu", "g4-k3-d2-same", "g8-1x1-shufflenet",
               "g3-1x1-s2-same-batch2", "g3-ci3-og5-relu_n1_to_1", "g2-nobias", "g12-ci1-og2", "g6-k3-regnet"]
QUANT_KINDS = ["int8-per-channel", "int8-per-tensor", "uint8-per-tensor"]


def _out_shape(case) -> tuple[int, int, int, int]:
    shape, (kh, kw), co, _, (sh, sw), (dh, dw), pad, _, _ = case
    p = Padding[pad]
    return shape[0], out_size(p, shape[1], kh, sh, dh), out_size(p, shape[2], kw, sw, dw), co


def _conv(mb: ModelBuilder, case, x: int, w: int, b: int, y: int) -> bytes:
    _, _, _, _, (sh, sw), (dh, dw), pad, act, _ = case
    mb.op("CONV_2D", [x, w, b], [y], padding=pad, stride_h=sh, stride_w=sw, dilation_h_factor=dh,
          dilation_w_factor=dw, fused_activation_function=act)
    mb.output(y)
    return mb.build()


def _float_model(case, seed: int) -> bytes:
    """LiteRT 2.3 refuses a CONV_2D without bias, so a bias-less case gets an explicit zero one
    (the same function; the bias-less node itself is tested on the quantized models' gpulite side)."""
    rng = np.random.default_rng(seed)
    shape, (kh, kw), co, groups, *_, has_bias = case
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    w = mb.const("w", rng.standard_normal((co, kh, kw, shape[3] // groups)).astype(np.float32))
    bias = rng.standard_normal(co).astype(np.float32) if has_bias else np.zeros(co, np.float32)
    b = mb.const("b", bias)
    return _conv(mb, case, x, w, b, mb.tensor("y", _out_shape(case), np.float32))


@pytest.mark.parametrize("case", CASES)
def test_grouped_conv_float(case: str, backend: str) -> None:
    x = np.random.default_rng(1).standard_normal(CASES[case][0]).astype(np.float32)
    check_op(_float_model(CASES[case], 10), [x], backend)


def _quant_model(case, kind: str, seed: int, zero_bias: bool = False) -> tuple[bytes, np.ndarray]:
    """A quantized grouped conv whose output scale fits its accumulator spread, plus an input
    (``zero_bias``: an all-zero bias where the case has none, for LiteRT's reference kernels)."""
    rng = np.random.default_rng(seed)
    shape, (kh, kw), co, groups, *_, has_bias = case
    dt = np.uint8 if kind.startswith("uint8") else np.int8
    per_channel = kind.endswith("per-channel")
    s_in, zp_in = 0.03, (7 if dt == np.int8 else 131)
    w_scale = rng.uniform(0.004, 0.02, co).astype(np.float32) if per_channel else np.float32(0.011)
    wshape = (co, kh, kw, shape[3] // groups)
    if dt == np.int8:
        wq, w_zp = rng.integers(-127, 128, wshape).astype(np.int8), 0
    else:
        wq, w_zp = rng.integers(0, 256, wshape).astype(np.uint8), 121
    spread = np.sqrt(kh * kw * wshape[3]) * 74 * 74 * s_in * float(np.max(w_scale))  # ~std of the sums
    mb = ModelBuilder()
    x = mb.input("x", shape, dt, quant=(s_in, zp_in))
    w = mb.const("w", wq, quant=Quant(scale=w_scale, zero_point=np.full(np.size(w_scale), w_zp, np.int64), axis=0))
    b = -1
    if has_bias or zero_bias:
        b_scale = (np.float32(s_in) * np.atleast_1d(w_scale)).astype(np.float32)
        bq = rng.integers(-3000, 3000, co).astype(np.int32) if has_bias else np.zeros(co, np.int32)
        b = mb.const("b", bq, quant=Quant(scale=b_scale, zero_point=np.zeros(b_scale.size, np.int64)))
    y = mb.tensor("y", _out_shape(case), dt, quant=(float(spread * 3 / 127), -4 if dt == np.int8 else 125))
    info = np.iinfo(dt)
    return _conv(mb, case, x, w, b, y), rng.integers(info.min, info.max + 1, shape).astype(dt)


@pytest.mark.parametrize("kind", QUANT_KINDS)
@pytest.mark.parametrize("case", QUANT_CASES)
def test_grouped_conv_quantized(case: str, kind: str, backend: str) -> None:
    """Each output channel sums over its group's input channels: bit-equal to default LiteRT
    (XNNPACK takes grouped int8 and uint8 convs: its fp32 rescale; a fused TANH, which it
    declines, runs the reference kernel), the reference kernels one code away at most."""
    model, x = _quant_model(CASES[case], kind, 12)
    ref_model = _quant_model(CASES[case], kind, 12, zero_bias=True)[0]
    check_quantized(model, [x], backend, int_tol=1, ref_model=ref_model, oracle="default")


def test_grouped_conv_channels_must_divide() -> None:
    """Input channels that are no multiple of the filter's are a clear ShapeError, not a crash."""
    from gpulite import Interpreter
    from gpulite.errors import ShapeError

    case = ((1, 6, 6, 10), (3, 3), 6, 3, (1, 1), (1, 1), "SAME", "NONE", True)
    mb = ModelBuilder()
    x = mb.input("x", case[0], np.float32)
    w = mb.const("w", np.ones((6, 3, 3, 3), np.float32))
    model = _conv(mb, case, x, w, mb.const("b", np.zeros(6, np.float32)), mb.tensor("y", (1, 6, 6, 6), np.float32))
    with pytest.raises(ShapeError, match="multiple of 3"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


def test_grouped_conv_runtime_weights_on_cpu() -> None:
    """A filter computed in the graph (a graph input here): each group's GEMM reads its rows of the
    arena in place at every invoke."""
    from gpulite import Interpreter
    from tests.ops.harness import run_litert

    case = ((1, 6, 6, 8), (3, 3), 6, 2, (1, 1), (1, 1), "SAME", "RELU", True)
    mb = ModelBuilder()
    x, w = mb.input("x", case[0], np.float32), mb.input("w", (6, 3, 3, 4), np.float32)
    model = _conv(mb, case, x, w, mb.const("b", np.arange(6, dtype=np.float32)),
                  mb.tensor("y", _out_shape(case), np.float32))
    it = Interpreter(model_content=model, backend="cpu")
    it.allocate_tensors()
    rng = np.random.default_rng(0)
    for _ in range(2):  # new weights at each invoke of one interpreter
        feeds = [rng.standard_normal(case[0]).astype(np.float32), rng.standard_normal((6, 3, 3, 4)).astype(np.float32)]
        for d, v in zip(it.get_input_details(), feeds, strict=True):
            it.set_tensor(d["index"], v)
        it.invoke()
        np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, feeds)[0],
                                   rtol=0, atol=2e-5)
