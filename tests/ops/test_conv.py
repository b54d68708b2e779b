"""CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV against LiteRT, float and quantized."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ShapeError
from gpulite.graph.shape_rules.conv import out_size
from gpulite.model.schema_gen import Padding
from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.compare import assert_same
from tests.ops.harness import check_op, run_gpulite, run_litert
from tests.ops.quant_ref import check_quantized

# id: (input NHWC, kernel (kh, kw), out channels (conv) / depth multiplier (depthwise),
#      stride (h, w), dilation (h, w), padding, activation, bias)
CASES = {
    "k3-s1-same-relu6": ((1, 9, 10, 4), (3, 3), 5, (1, 1), (1, 1), "SAME", "RELU6", True),
    "k3-s2-same-none": ((1, 9, 10, 4), (3, 3), 5, (2, 2), (1, 1), "SAME", "NONE", True),
    "k3-s2-valid-relu": ((1, 9, 10, 4), (3, 3), 5, (2, 2), (1, 1), "VALID", "RELU", True),
    "k3-d2-same-relu_n1_to_1": ((1, 11, 9, 4), (3, 3), 5, (1, 1), (2, 2), "SAME", "RELU_N1_TO_1", True),
    "k3-d2-valid-tanh": ((1, 11, 9, 4), (3, 3), 5, (1, 1), (2, 2), "VALID", "TANH", True),
    "k1-s1-valid": ((1, 6, 7, 8), (1, 1), 6, (1, 1), (1, 1), "VALID", "NONE", True),
    "k1-s2-same": ((1, 7, 7, 8), (1, 1), 6, (2, 2), (1, 1), "SAME", "NONE", True),
    "k5-s2-same": ((1, 16, 16, 3), (5, 5), 8, (2, 2), (1, 1), "SAME", "RELU", True),
    "k2-s1-same-even": ((1, 6, 6, 3), (2, 2), 4, (1, 1), (1, 1), "SAME", "NONE", True),
    "k3x1-s2x1-rect": ((1, 9, 6, 3), (3, 1), 4, (2, 1), (1, 1), "SAME", "NONE", True),
    "nobias": ((1, 8, 8, 4), (3, 3), 5, (1, 1), (1, 1), "SAME", "NONE", False),
    "batch2": ((2, 7, 8, 3), (3, 3), 4, (2, 1), (1, 2), "SAME", "RELU6", True),
    "chunked": ((1, 48, 64, 32), (3, 3), 16, (1, 1), (1, 1), "SAME", "RELU", True),
    "k3-s2-d2-same": ((1, 13, 12, 4), (3, 3), 3, (2, 2), (2, 2), "SAME", "NONE", True),
    "k4x3-s3x2-d1x2-valid": ((1, 14, 13, 3), (4, 3), 3, (3, 2), (1, 2), "VALID", "RELU", True),
    # One output channel takes the depthwise-then-channel-sum path.
    "o1-k3-s1-valid-head": ((1, 20, 18, 8), (3, 3), 1, (1, 1), (1, 1), "VALID", "NONE", True),
    "o1-k3-s2-same-relu6": ((2, 9, 10, 5), (3, 3), 1, (2, 2), (1, 1), "SAME", "RELU6", True),
    "o1-nobias-d2": ((1, 11, 9, 4), (3, 3), 1, (1, 1), (2, 2), "SAME", "NONE", False),
    "k3-s1-same-tanh-c3": ((1, 6, 6, 3), (3, 3), 3, (1, 1), (1, 1), "SAME", "TANH", True),
    # The WebGPU tiled product's edges (kernels/gemm.py: 32x32 output tiles, K in steps of 16):
    # 99 pixels x 37 channels, K = 108 read as vec4s; a 1x1 conv read as a matrix of 13 columns
    # (not vec4s) at batch 2; K = 864 over few tiles (four K groups per workgroup); K = 4200
    # (past 4 x 1024: K split across workgroups, then summed); 2048 pixels x 32 channels, K = 144
    # (4 rows per thread, and four K groups).
    "gemm-edges-k3": ((1, 9, 11, 12), (3, 3), 37, (1, 1), (1, 1), "SAME", "RELU", True),
    "gemm-rows4-groups": ((1, 32, 64, 16), (3, 3), 32, (1, 1), (1, 1), "SAME", "RELU6", True),
    "gemm-1x1-c13-batch2": ((2, 5, 7, 13), (1, 1), 33, (1, 1), (1, 1), "VALID", "RELU6", True),
    "gemm-k3-c96-groups": ((1, 5, 5, 96), (3, 3), 40, (1, 1), (1, 1), "SAME", "NONE", True),
    "gemm-1x1-c4200-split": ((1, 2, 3, 4200), (1, 1), 5, (1, 1), (1, 1), "VALID", "NONE", True),
}
QUANT_CASES = ["k3-s1-same-relu6", "k3-s2-valid-relu", "k3-d2-same-relu_n1_to_1", "k3-d2-valid-tanh",
               "k1-s1-valid", "k1-s2-same", "k2-s1-same-even", "nobias", "batch2"]
QUANT_KINDS = ["int8-per-channel", "int8-per-tensor", "uint8-per-tensor"]
# Cases where default LiteRT (XNNPACK, or its optimized builtin kernels) puts a few outputs one
# code away from TFLite's reference kernels (quant_ref.OPTIMIZED_ROUNDING). gpulite matches
# default LiteRT exactly (quantized_conv.conv_rescale). Measured with ai-edge-litert 2.3.0;
# everywhere else both must agree exactly.
OPTIMIZED_ROUNDING_CASES = {
    ("CONV_2D", "k1-s1-valid", "uint8-per-tensor"), ("CONV_2D", "k1-s2-same", "uint8-per-tensor"),
    ("CONV_2D", "k2-s1-same-even", "int8-per-tensor"), ("CONV_2D", "nobias", "int8-per-tensor"),
    ("CONV_2D", "batch2", "int8-per-channel"),
    ("DEPTHWISE_CONV_2D", "k3-s1-same-relu6", "int8-per-tensor"),
    ("DEPTHWISE_CONV_2D", "k3-d2-same-relu_n1_to_1", "int8-per-tensor"),
    ("DEPTHWISE_CONV_2D", "k1-s1-valid", "int8-per-channel"), ("DEPTHWISE_CONV_2D", "k1-s1-valid", "int8-per-tensor"),
    ("DEPTHWISE_CONV_2D", "k1-s2-same", "int8-per-channel"), ("DEPTHWISE_CONV_2D", "nobias", "int8-per-tensor"),
    ("DEPTHWISE_CONV_2D", "batch2", "int8-per-channel"), ("DEPTHWISE_CONV_2D", "mult2-s2-valid", "int8-per-channel"),
    ("DEPTHWISE_CONV_2D", "mult3-d2", "int8-per-channel"), ("DEPTHWISE_CONV_2D", "mult3-d2", "int8-per-tensor"),
}


def _out_hw(case):
    shape, (kh, kw), _, (sh, sw), (dh, dw), pad, _, _ = case
    p = Padding[pad]
    return out_size(p, shape[1], kh, sh, dh), out_size(p, shape[2], kw, sw, dw)


def _float_model(op: str, case, seed: int, zero_bias: bool = False) -> bytes:
    """A float conv/depthwise model; ``zero_bias`` as in :func:`_quant_model`."""
    rng = np.random.default_rng(seed)
    shape, (kh, kw), m, (sh, sw), (dh, dw), pad, act, has_bias = case
    oh, ow = _out_hw(case)
    co = m if op == "CONV_2D" else shape[3] * m
    wshape = (co, kh, kw, shape[3]) if op == "CONV_2D" else (1, kh, kw, co)
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    w = mb.const("w", rng.standard_normal(wshape).astype(np.float32))
    bias = rng.standard_normal(co).astype(np.float32) if has_bias else np.zeros(co, np.float32)
    b = mb.const("b", bias) if has_bias or zero_bias else -1
    y = mb.tensor("y", (shape[0], oh, ow, co), np.float32)
    opts = dict(padding=pad, stride_h=sh, stride_w=sw, dilation_h_factor=dh, dilation_w_factor=dw,
                fused_activation_function=act)
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = m
    mb.op(op, [x, w, b], [y], **opts)
    mb.output(y)
    return mb.build()


def check_equivalent(model: bytes, ref_model: bytes, inputs: list[np.ndarray], backend: str) -> None:
    """gpulite on ``model`` against LiteRT on ``ref_model``, a model computing the same function.

    LiteRT 2.3 cannot run a bias-less CONV_2D ("conv.cc: has_bias was not true") and its
    XNNPACK path crashes on a bias-less DEPTHWISE_CONV_2D, so for those cases the oracle runs
    the same weights with an explicit zero bias; with a bias, both models are the same.
    """
    expected, actual = run_litert(ref_model, inputs), run_gpulite(model, inputs, backend)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, what=f"output {i} ({backend})")


@pytest.mark.parametrize("case", CASES)
def test_conv2d_float(case: str, backend: str) -> None:
    x = np.random.default_rng(1).standard_normal(CASES[case][0]).astype(np.float32)
    check_equivalent(_float_model("CONV_2D", CASES[case], 10), _float_model("CONV_2D", CASES[case], 10, True),
                     [x], backend)


DW_CASES = {**CASES, "mult2-s1": ((1, 8, 9, 3), (3, 3), 2, (1, 1), (1, 1), "SAME", "RELU6", True),
            "mult2-s2-valid": ((1, 9, 9, 3), (3, 3), 2, (2, 2), (1, 1), "VALID", "NONE", True),
            "mult3-d2": ((1, 10, 10, 2), (3, 3), 3, (1, 1), (2, 2), "SAME", "NONE", False),
            "k5-s2-pose": ((1, 20, 20, 16), (5, 5), 1, (2, 2), (1, 1), "VALID", "RELU6", True),
            # Multiplier 1 on 3 channels (the one-channel-per-thread kernel) and on 4 (vec4s).
            "mult1-k3-s1-same-tanh-c3": ((1, 6, 6, 3), (3, 3), 1, (1, 1), (1, 1), "SAME", "TANH", True),
            "mult1-k2-s1-same-even-c3": ((1, 6, 6, 3), (2, 2), 1, (1, 1), (1, 1), "SAME", "NONE", True),
            "mult1-k3-s2-valid-relu-c4": ((1, 9, 10, 4), (3, 3), 1, (2, 2), (1, 1), "VALID", "RELU", True),
            "mult2-k3-s2-same": ((1, 9, 10, 4), (3, 3), 2, (2, 2), (1, 1), "SAME", "NONE", True),
            # WebGPU's register-blocked kernel (four output columns per thread): 9 columns (a
            # block of one at the end) at batch 2; stride 2 with dilation 2 on a 5x5 filter (the
            # four windows span 15 input columns); a 1x5 filter with column stride 2.
            "rb-tail-batch2": ((2, 7, 9, 8), (3, 3), 1, (1, 1), (1, 1), "SAME", "RELU6", True),
            "rb-k5-s2-d2": ((1, 15, 17, 8), (5, 5), 1, (2, 2), (2, 2), "SAME", "RELU", True),
            "rb-k1x5-s1x2": ((1, 6, 13, 12), (1, 5), 1, (1, 2), (1, 1), "VALID", "NONE", False)}
DW_CASES["chunked"] = ((1, 64, 64, 16), (3, 3), 1, (1, 1), (1, 1), "SAME", "RELU6", True)


@pytest.mark.parametrize("case", DW_CASES)
def test_depthwise_float(case: str, backend: str) -> None:
    x = np.random.default_rng(2).standard_normal(DW_CASES[case][0]).astype(np.float32)
    op = "DEPTHWISE_CONV_2D"
    check_equivalent(_float_model(op, DW_CASES[case], 11), _float_model(op, DW_CASES[case], 11, True), [x], backend)


def _quant_model(op: str, case, kind: str, seed: int, zero_bias: bool = False) -> tuple[bytes, np.ndarray]:
    """A quantized conv whose output scale fits its accumulator spread, plus an input.

    ``zero_bias`` writes an all-zero bias where the case has none: the same function for
    LiteRT's reference conv kernels, which refuse a conv without bias.
    """
    rng = np.random.default_rng(seed)
    shape, (kh, kw), m, (sh, sw), (dh, dw), pad, act, has_bias = case
    oh, ow = _out_hw(case)
    sixteen = kind.startswith("int16x8")  # int16 activations (zero point 0), int8 weights, int64 bias
    dt = np.int16 if sixteen else np.uint8 if kind.startswith("uint8") else np.int8
    per_channel = kind.endswith("per-channel")
    co = m if op == "CONV_2D" else shape[3] * m
    wshape, axis = ((co, kh, kw, shape[3]), 0) if op == "CONV_2D" else ((1, kh, kw, co), 3)
    s_in, zp_in = (0.0005, 0) if sixteen else (0.03, 7 if dt == np.int8 else 131)
    x_max = 3000 if sixteen else 128  # inputs drawn from [-x_max, x_max) (8-bit: the whole range)
    w_scale = rng.uniform(0.004, 0.02, co).astype(np.float32) if per_channel else np.float32(0.011)
    if dt != np.uint8:
        wq, w_zp = rng.integers(-127, 128, wshape).astype(np.int8), 0
    else:
        wq, w_zp = rng.integers(0, 256, wshape).astype(np.uint8), 121
    taps = kh * kw * (shape[3] if op == "CONV_2D" else 1)
    spread = np.sqrt(taps) * 74 * (x_max * 74 // 128) * s_in * float(np.max(w_scale))  # ~std of the accumulator
    s_out = float(spread * 3 / (32767 if sixteen else 127))
    zp_out = 0 if sixteen else (-4 if dt == np.int8 else 125)
    mb = ModelBuilder()
    x = mb.input("x", shape, dt, quant=(s_in, zp_in))
    zps = np.full(np.size(w_scale), w_zp, np.int64)
    w = mb.const("w", wq, quant=Quant(scale=w_scale, zero_point=zps, axis=axis))
    b = -1
    bq = rng.integers(-3000, 3000, co).astype(np.int64 if sixteen else np.int32)
    if has_bias or zero_bias:
        b_scale = (np.float32(s_in) * np.atleast_1d(w_scale)).astype(np.float32)
        bq = bq if has_bias else np.zeros_like(bq)
        b = mb.const("b", bq, quant=Quant(scale=b_scale, zero_point=np.zeros(b_scale.size, np.int64)))
    y = mb.tensor("y", (shape[0], oh, ow, co), dt, quant=(s_out, zp_out))
    opts = dict(padding=pad, stride_h=sh, stride_w=sw, dilation_h_factor=dh, dilation_w_factor=dw,
                fused_activation_function=act)
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = m
    mb.op(op, [x, w, b], [y], **opts)
    mb.output(y)
    lo, hi = (-x_max, x_max) if sixteen else (np.iinfo(dt).min, np.iinfo(dt).max + 1)
    return mb.build(), rng.integers(lo, hi, shape).astype(dt)


@pytest.mark.parametrize("kind", QUANT_KINDS)
@pytest.mark.parametrize("case", QUANT_CASES)
def test_conv2d_quantized(case: str, kind: str, backend: str) -> None:
    model, x = _quant_model("CONV_2D", CASES[case], kind, 12)
    ref_model = _quant_model("CONV_2D", CASES[case], kind, 12, zero_bias=True)[0]
    tol = int(("CONV_2D", case, kind) in OPTIMIZED_ROUNDING_CASES)
    check_quantized(model, [x], backend, int_tol=tol, ref_model=ref_model, oracle="default")


@pytest.mark.parametrize("kind", QUANT_KINDS)
@pytest.mark.parametrize("case", [*QUANT_CASES, "mult2-s2-valid", "mult3-d2"])
def test_depthwise_quantized(case: str, kind: str, backend: str) -> None:
    model, x = _quant_model("DEPTHWISE_CONV_2D", DW_CASES[case], kind, 13)
    ref_model = _quant_model("DEPTHWISE_CONV_2D", DW_CASES[case], kind, 13, zero_bias=True)[0]
    tol = int(("DEPTHWISE_CONV_2D", case, kind) in OPTIMIZED_ROUNDING_CASES)
    check_quantized(model, [x], backend, int_tol=tol, ref_model=ref_model, oracle="default")


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@pytest.mark.parametrize("case", QUANT_CASES)
def test_conv_int16x8(op: str, case: str, backend: str) -> None:
    """The 16x8 mode (int16 activations, int8 per-channel weights, int64 bias): TFLite's kernels
    accumulate in int64 and rescale with the int64 MultiplyByQuantizedMultiplier (a Q15 multiplier,
    one rounding); LiteRT has no other path for it, so the match is exact."""
    cases = CASES if op == "CONV_2D" else DW_CASES
    model, x = _quant_model(op, cases[case], "int16x8-per-channel", 18)
    ref_model = _quant_model(op, cases[case], "int16x8-per-channel", 18, zero_bias=True)[0]
    check_quantized(model, [x], backend, ref_model=ref_model)


# id: (input NHWC, kernel, out channels, stride, padding, output HW, bias, activation)
TCONV_CASES = {
    "k3-s2-same": ((1, 4, 5, 3), (3, 3), 4, (2, 2), "SAME", (8, 10), True, "NONE"),
    "k3-s2-same-odd": ((1, 4, 4, 3), (3, 3), 4, (2, 2), "SAME", (7, 7), True, "NONE"),
    "k2-s2-valid": ((1, 4, 5, 6), (2, 2), 3, (2, 2), "VALID", (8, 10), True, "NONE"),
    "k3-s1-same": ((1, 5, 5, 2), (3, 3), 3, (1, 1), "SAME", (5, 5), True, "NONE"),
    "k3-s2-valid": ((1, 4, 4, 2), (3, 3), 3, (2, 2), "VALID", (9, 9), True, "NONE"),
    "k4-s2-same-relu": ((1, 6, 6, 8), (4, 4), 5, (2, 2), "SAME", (12, 12), True, "RELU"),
    "k3-s2x1-nobias": ((2, 3, 4, 3), (3, 3), 2, (2, 1), "SAME", (6, 4), False, "NONE"),
}


@pytest.mark.parametrize("case", TCONV_CASES)
def test_transpose_conv(case: str, backend: str) -> None:
    shape, (kh, kw), co, (sh, sw), pad, (oh, ow), has_bias, act = TCONV_CASES[case]
    rng = np.random.default_rng(14)
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    oshape = mb.const("output_shape", np.array([shape[0], oh, ow, co], np.int32))
    w = mb.const("w", rng.standard_normal((co, kh, kw, shape[3])).astype(np.float32))
    b = mb.const("b", rng.standard_normal(co).astype(np.float32)) if has_bias else -1
    y = mb.tensor("y", (shape[0], oh, ow, co), np.float32)
    mb.op("TRANSPOSE_CONV", [oshape, w, x, b], [y], padding=pad, stride_h=sh, stride_w=sw,
          fused_activation_function=act, op_version=4)
    mb.output(y)
    check_op(mb.build(), [rng.standard_normal(shape).astype(np.float32)], backend)


def _tconv_quant_model(case: str, kind: str, per_channel: bool, rng) -> tuple[bytes, np.ndarray]:
    """TRANSPOSE_CONV of TCONV_CASES[case] with int8 weights: ``kind`` "int8" (int8 tensors, int32
    bias) or "hybrid" (float input, output and bias, as the dynamic-range converter writes it)."""
    shape, (kh, kw), co, (sh, sw), pad, (oh, ow), has_bias, act = TCONV_CASES[case]
    s_w = rng.uniform(0.002, 0.01, co if per_channel else 1).astype(np.float32)
    w = rng.integers(-127, 128, (co, kh, kw, shape[3])).astype(np.int8)
    mb = ModelBuilder()
    oshape = mb.const("output_shape", np.array([shape[0], oh, ow, co], np.int32))
    wi = mb.const("w", w, quant=Quant(s_w, 0, axis=0))
    if kind == "int8":
        x = mb.input("x", shape, np.int8, quant=(0.05, 3))
        b_scale = (np.float32(0.05) * s_w).astype(np.float32)
        b = mb.const("b", rng.integers(-500, 500, co).astype(np.int32), quant=Quant(b_scale, 0)) if has_bias else -1
        y = mb.tensor("y", (shape[0], oh, ow, co), np.int8, quant=(0.08, -2))
        xv = rng.integers(-128, 128, shape).astype(np.int8)
    elif kind == "int16":  # the 16x8 mode: symmetric int16 activations, int64 bias
        x = mb.input("x", shape, np.int16, quant=(0.0004, 0))
        b_scale = (np.float32(0.0004) * s_w).astype(np.float32)
        b = mb.const("b", rng.integers(-60000, 60000, co).astype(np.int64), quant=Quant(b_scale, 0)) \
            if has_bias else -1
        y = mb.tensor("y", (shape[0], oh, ow, co), np.int16, quant=(0.0006, 0))
        xv = rng.integers(-32768, 32768, shape).astype(np.int16)
    else:
        x = mb.input("x", shape, np.float32)
        b = mb.const("b", rng.standard_normal(co).astype(np.float32)) if has_bias else -1
        y = mb.tensor("y", (shape[0], oh, ow, co), np.float32)
        xv = rng.normal(0.3, 1.0, shape).astype(np.float32)
    mb.op("TRANSPOSE_CONV", [oshape, wi, x, b], [y], padding=pad, stride_h=sh, stride_w=sw,
          fused_activation_function=act, op_version=4)
    mb.output(y)
    return mb.build(), xv


@pytest.mark.parametrize("case", TCONV_CASES)
def test_transpose_conv_int8(case: str, backend: str) -> None:
    """Per-channel int8 weights (a constant output shape): exact against default LiteRT (XNNPACK's
    fp32 rescale), within one code of its reference kernel."""
    model, x = _tconv_quant_model(case, "int8", True, np.random.default_rng(16))
    check_quantized(model, [x], backend, int_tol=1, oracle="default")


def _tconv_shape_at_run_time_model(rng) -> tuple[bytes, np.ndarray]:
    """An int8 TRANSPOSE_CONV (k2 s2 SAME, 10 output channels) whose output shape is computed from
    the input's (``SHAPE * [1, 2, 2, 0] + [0, 0, 0, 10]``, as U-Nets' ``tf.shape`` builds it):
    XNNPACK declines it, so default LiteRT runs its builtin optimized kernel. The scales are
    powers of two (rescale factors 2**-2 .. 2**-6 per channel) and the products small, so many
    accumulators land on a negative tie of the final rounding shift, where that kernel's NEON loop (channels 0..7)
    rounds up and MultiplyByQuantizedMultiplier (channels 8, 9) away from zero."""
    co, ci = 10, 6
    s_w = np.float32(2.0) ** -np.arange(5, 5 + co // 2).repeat(2).astype(np.float32)
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 5, ci), np.int8, quant=(0.0625, 3))
    shape = mb.tensor("shape", (4,), np.int32)
    mb.op("SHAPE", [x], [shape], out_type="INT32")
    scaled = mb.tensor("scaled", (4,), np.int32)
    mb.op("MUL", [shape, mb.const("twice", np.array([1, 2, 2, 0], np.int32))], [scaled])
    oshape = mb.tensor("output_shape", (4,), np.int32)
    mb.op("ADD", [scaled, mb.const("channels", np.array([0, 0, 0, co], np.int32))], [oshape])
    w = mb.const("w", rng.integers(-4, 5, (co, 2, 2, ci)).astype(np.int8), quant=Quant(s_w, 0, axis=0))
    b = mb.const("b", rng.integers(-20, 20, co).astype(np.int32), quant=Quant(np.float32(0.0625) * s_w, 0))
    y = mb.tensor("y", (1, 8, 10, co), np.int8, quant=(2.0 ** -7, -5))
    mb.op("TRANSPOSE_CONV", [oshape, w, x, b], [y], padding="SAME", stride_h=2, stride_w=2, op_version=4)
    mb.output(y)
    return mb.build(), rng.integers(-40, 40, (1, 4, 5, ci)).astype(np.int8)


def test_transpose_conv_int8_shape_at_run_time(backend: str) -> None:
    """An int8 TRANSPOSE_CONV that XNNPACK declines (corpus/unet_int8's): exact against default
    LiteRT, whose builtin optimized kernel rounds negative ties up in its NEON loop and away from
    zero in the rest (one code from the reference kernel on those)."""
    model, x = _tconv_shape_at_run_time_model(np.random.default_rng(48))
    ref = check_quantized(model, [x], backend, int_tol=1, oracle="default")
    assert not np.array_equal(ref, run_litert(model, [x])[0]), "no tie: the case proves nothing"


# id: (input HW, out channels, fused activation, power-of-two scales) of a uint8 k2 s2 SAME TRANSPOSE_CONV
# (output sizes 16k + 0, 4, 12 and 8: the builtin kernel's NEON blocks and its scalar tail)
UINT8_TCONV = {"c10": ((4, 5), 10, "NONE", True), "c3-tail": ((3, 5), 3, "NONE", True),
               "c7-tail12": ((3, 3), 7, "NONE", True), "c7-relu": ((3, 3), 7, "RELU", True),
               "c9-scales": ((2, 3), 9, "RELU6", False)}


def _tconv_uint8_model(case: str, shape_at_run_time: bool, rng) -> tuple[bytes, np.ndarray]:
    """uint8 input, per-tensor uint8 filter (zero point 128) and output: with a constant output
    shape default LiteRT runs it in XNNPACK, with one computed at run time in its builtin optimized
    kernel. Power-of-two scales (rescale 2**-3) and odd sums land ties in both rounding steps."""
    (h, w), co, act, pow2 = UINT8_TCONV[case]
    ci = 6
    s_x, s_w, s_y = (0.0625, 2.0 ** -5, 2.0 ** -6) if pow2 else (0.043, 0.0071, 0.0131)
    mb = ModelBuilder()
    x = mb.input("x", (1, h, w, ci), np.uint8, quant=(s_x, 131))
    if shape_at_run_time:
        shape, scaled, oshape = (mb.tensor(n, (4,), np.int32) for n in ("shape", "scaled", "output_shape"))
        mb.op("SHAPE", [x], [shape], out_type="INT32")
        mb.op("MUL", [shape, mb.const("twice", np.array([1, 2, 2, 0], np.int32))], [scaled])
        mb.op("ADD", [scaled, mb.const("channels", np.array([0, 0, 0, co], np.int32))], [oshape])
    else:
        oshape = mb.const("output_shape", np.array([1, 2 * h, 2 * w, co], np.int32))
    wc = mb.const("w", rng.integers(124, 133, (co, 2, 2, ci)).astype(np.uint8), quant=Quant(np.float32(s_w), 128))
    b = mb.const("b", rng.integers(-20, 20, co).astype(np.int32), quant=Quant(np.float32(s_x) * np.float32(s_w), 0))
    y = mb.tensor("y", (1, 2 * h, 2 * w, co), np.uint8, quant=(s_y, 100))
    mb.op("TRANSPOSE_CONV", [oshape, wc, x, b], [y], padding="SAME", stride_h=2, stride_w=2,
          fused_activation_function=act, op_version=4)
    mb.output(y)
    return mb.build(), rng.integers(91, 171, (1, h, w, ci)).astype(np.uint8)


@pytest.mark.parametrize("shape_at_run_time", [False, True], ids=["xnnpack", "builtin"])
@pytest.mark.parametrize("case", UINT8_TCONV)
def test_transpose_conv_uint8(case: str, shape_at_run_time: bool, backend: str) -> None:
    """uint8 TRANSPOSE_CONV exact against default LiteRT: XNNPACK's fp32 requantization (a constant
    output shape), or its optimized builtin kernel's Quantize, halves up in both steps on every
    element (one computed at run time); was refused. The power-of-two cases must differ from the
    reference kernel somewhere, else they prove nothing."""
    model, x = _tconv_uint8_model(case, shape_at_run_time, np.random.default_rng(52))
    ref = check_quantized(model, [x], backend, int_tol=1, oracle="default")
    if UINT8_TCONV[case][3] and UINT8_TCONV[case][2] == "NONE":
        assert not np.array_equal(ref, run_litert(model, [x])[0]), "no tie: the case proves nothing"


@pytest.mark.parametrize("case", TCONV_CASES)
def test_transpose_conv_int16(case: str, backend: str) -> None:
    """16x8 (int16 activations, int8 per-channel weights, int64 bias; onnx2tf's
    integer_quant_with_int16_act decoders): exact against LiteRT's reference kernel, within one
    code of its default path."""
    model, x = _tconv_quant_model(case, "int16", True, np.random.default_rng(18))
    check_quantized(model, [x], backend, int_tol=1)


def test_transpose_conv_int16_int32_bias(backend: str) -> None:
    """16x8 with an int32 bias and the ``quantized_bias_type`` option saying so (TensorFlow's
    converter asked for int32 biases): LiteRT runs its optimized kernel, int32 sums rescaled by
    the optimized per-channel Quantize (its NEON loop for channels 0..7, the Q31 multiplier),
    not the reference kernel's Q15 one; exact against it (a step from the reference kernel)."""
    rng = np.random.default_rng(49)
    co, ci = 10, 6
    s_w = rng.uniform(0.002, 0.01, co).astype(np.float32)
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 5, ci), np.int16, quant=(0.0004, 0))
    oshape = mb.const("output_shape", np.array([1, 8, 10, co], np.int32))
    w = mb.const("w", rng.integers(-127, 128, (co, 2, 2, ci)).astype(np.int8), quant=Quant(s_w, 0, axis=0))
    b = mb.const("b", rng.integers(-60000, 60000, co).astype(np.int32), quant=Quant(np.float32(0.0004) * s_w, 0))
    y = mb.tensor("y", (1, 8, 10, co), np.int16, quant=(0.0006, 0))
    mb.op("TRANSPOSE_CONV", [oshape, w, x, b], [y], padding="SAME", stride_h=2, stride_w=2, op_version=4,
          quantized_bias_type="INT32")
    mb.output(y)
    check_quantized(mb.build(), [rng.integers(-32768, 32768, (1, 4, 5, ci)).astype(np.int16)], backend, int_tol=1,
                    oracle="default")


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("case", TCONV_CASES)
def test_transpose_conv_hybrid(case: str, per_channel: bool, backend: str) -> None:
    """Dynamic-range TRANSPOSE_CONV (float input, int8 weights; the U-Net decoders of dynrange models)."""
    model, x = _tconv_quant_model(case, "hybrid", per_channel, np.random.default_rng(17))
    check_op(model, [x], backend)


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_resized_input_follows_shape_rule(op: str, backend: str) -> None:
    """A bigger input after resize_tensor_input: shape rule and kernel agree with LiteRT."""
    case = ((1, 8, 8, 4), (3, 3), 2, (2, 2), (1, 1), "SAME", "RELU", True)
    x = np.random.default_rng(3).standard_normal((1, 13, 11, 4)).astype(np.float32)
    check_op(_float_model(op, case, 15), [x], backend)


def test_wrong_stored_output_shape_is_rejected_at_allocate() -> None:
    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 3), np.float32)
    w = mb.const("w", np.ones((4, 3, 3, 3), np.float32))
    y = mb.tensor("y", (1, 8, 7, 4), np.float32)  # SAME, stride 1 would give 8x8
    mb.op("CONV_2D", [x, w, -1], [y], padding="SAME", stride_w=1, stride_h=1)
    mb.output(y)
    it = Interpreter(model_content=mb.build())
    with pytest.raises(ShapeError, match=r"stored with shape \[1, 8, 7, 4\], but its inputs give \[1, 8, 8, 4\]"):
        it.allocate_tensors()


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_rescale_rounding_matches_litert_on_many_outputs(op: str, dtype: str, backend: str) -> None:
    """32K outputs with small output scales: enough exact-half cases that a wrong rescale misses
    some. Exact against default LiteRT: XNNPACK's float32 requantization for CONV_2D and int8
    DEPTHWISE_CONV_2D, the optimized builtin kernel's double rounding for uint8 DEPTHWISE_CONV_2D
    (the reference kernels' double rounding differs on some of the former)."""
    dt = np.dtype(dtype).type
    rng = np.random.default_rng(17)
    wz, oz = (0, 0) if dt == np.int8 else (128, 128)
    s_in, s_w, s_out = 0.031, 0.0123, 0.17
    mb = ModelBuilder()
    if op == "CONV_2D":
        x = mb.input("x", (1, 16, 32, 2), dt, quant=(s_in, 0))
        wv = (rng.integers(-20, 20, (64, 1, 1, 2)) + wz).astype(dt)
    else:
        x = mb.input("x", (1, 16, 32, 64), dt, quant=(s_in, 0))
        wv = (rng.integers(-20, 20, (1, 1, 1, 64)) + wz).astype(dt)
    w = mb.const("w", wv, quant=Quant(scale=s_w, zero_point=wz))
    b_scale = float(np.float32(s_in) * np.float32(s_w))
    b = mb.const("b", rng.integers(-50, 50, 64).astype(np.int32), quant=Quant(scale=b_scale))
    y = mb.tensor("y", (1, 16, 32, 64), dt, quant=(s_out, oz))
    opts = {"depth_multiplier": 1} if op == "DEPTHWISE_CONV_2D" else {}
    mb.op(op, [x, w, b], [y], padding="VALID", stride_w=1, stride_h=1, **opts)
    mb.output(y)
    info = np.iinfo(dt)
    xv = rng.integers(info.min, info.max + 1, mb._tensors[x].shape).astype(dt)
    # The kernels not followed round some of these differently: see OPTIMIZED_ROUNDING_CASES.
    check_quantized(mb.build(), [xv], backend, int_tol=1, oracle="default")


def _tie_model(op: str, dt, act: str, variant: str, rng) -> tuple[bytes, np.ndarray]:
    """A CONV_2D / DEPTHWISE_CONV_2D whose scales are powers of two (rescale factors 2**-2 ..
    2**-4, per channel for int8) and products small, so many accumulators land on a tie of the
    rescale's roundings, where XNNPACK's float32 requantization (halves to even), the optimized
    builtin kernels' NEON / ruy rounding (halves up) and the reference kernels' (away from zero)
    part. 13 input channels (depthwise: 13 outputs, one block of 8 and a tail of 5). ``variant``
    ``"groups3"`` splits a CONV_2D's 12 input channels in 3 groups, ``"axis3"`` stores a uint8
    depthwise filter's per-tensor quantization on dimension 3."""
    uint = dt == np.uint8
    zin, zw, zout = (131, 133, 123) if uint else (3, 0, -5)
    groups = 3 if variant == "groups3" else 1
    ci = 12 if groups > 1 else 13
    co = ci if op == "DEPTHWISE_CONV_2D" else 18
    s_w = np.float32(2.0) ** -(5 + np.arange(1 if uint else co) % 3).astype(np.float32)
    wshape, axis = ((1, 3, 3, co), 3) if op == "DEPTHWISE_CONV_2D" else ((co, 3, 3, ci // groups), 0)
    axis = 0 if uint and variant != "axis3" else axis
    mb = ModelBuilder()
    x = mb.input("x", (1, 5, 9, ci), dt, quant=(0.0625, zin))
    w = mb.const("w", (rng.integers(-4, 5, wshape) + zw).astype(dt),
                 quant=Quant(s_w, np.full(s_w.size, zw, np.int64), axis=axis))
    b = mb.const("b", rng.integers(-20, 20, co).astype(np.int32), quant=Quant(np.float32(0.0625) * s_w, 0))
    y = mb.tensor("y", (1, 5, 9, co), dt, quant=(2.0 ** -7, zout))
    opts = {"depth_multiplier": 1} if op == "DEPTHWISE_CONV_2D" else {}
    mb.op(op, [x, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function=act, **opts)
    mb.output(y)
    return mb.build(), (rng.integers(-40, 40, (1, 5, 9, ci)) + zin).astype(dt)


def litert_kernel(model: bytes) -> str:
    """``"xnnpack"`` if default LiteRT hands the model's op to its XNNPACK delegate, else ``"builtin"``."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    it = LiteRT(model_content=bytes(model))
    it.allocate_tensors()
    return "xnnpack" if any(d["op_name"] == "DELEGATE" for d in it._get_ops_details()) else "builtin"


# (op, dtype, fused activation, variant) -> the kernel default LiteRT 2.3 runs it on, and whether
# that rounds the ties as the reference kernels do
TIE_CASES = {
    ("CONV_2D", "int8", "RELU6", ""): ("xnnpack", False), ("CONV_2D", "int8", "TANH", ""): ("builtin", False),
    ("CONV_2D", "uint8", "NONE", ""): ("xnnpack", False), ("CONV_2D", "uint8", "TANH", ""): ("builtin", False),
    ("CONV_2D", "int8", "TANH", "groups3"): ("builtin", True),
    ("CONV_2D", "uint8", "TANH", "groups3"): ("builtin", True),
    ("DEPTHWISE_CONV_2D", "int8", "NONE", ""): ("xnnpack", False),
    ("DEPTHWISE_CONV_2D", "int8", "TANH", ""): ("builtin", False),
    ("DEPTHWISE_CONV_2D", "uint8", "RELU", ""): ("xnnpack", False),
    ("DEPTHWISE_CONV_2D", "uint8", "RELU", "axis3"): ("builtin", True),
    ("DEPTHWISE_CONV_2D", "uint8", "TANH", ""): ("builtin", True),
}


@pytest.mark.parametrize("case", TIE_CASES, ids=["-".join(filter(None, c)) for c in TIE_CASES])
def test_rescale_ties_match_default_litert(case, backend: str) -> None:
    """Exact against default LiteRT on ties, whichever kernel it runs (the table is asserted):
    XNNPACK's float32 requantization; its optimized builtin CONV_2D's ruy rounding (halves up,
    every channel), int8 DEPTHWISE_CONV_2D's NEON output stage (halves up in whole blocks of 8
    channels, away from zero in the rest); uint8 depthwise and grouped convs round as the
    reference kernels. Where default LiteRT and the reference kernels differ, the case shows it."""
    op, dtype, act, variant = case
    kernel, as_reference = TIE_CASES[case]
    model, x = _tie_model(op, np.dtype(dtype).type, act, variant, np.random.default_rng(49))
    assert litert_kernel(model) == kernel
    ref = check_quantized(model, [x], backend, int_tol=1, oracle="default")
    assert np.array_equal(ref, run_litert(model, [x])[0]) == as_reference, "no tie: the case proves nothing"


def test_conv2d_runtime_filter_and_bias(backend: str) -> None:
    """Filter and bias fed as graph inputs (not constants): weights re-laid out every invoke."""
    rng = np.random.default_rng(18)
    mb = ModelBuilder()
    x = mb.input("x", (1, 6, 7, 3), np.float32)
    w = mb.input("w", (4, 3, 3, 3), np.float32)
    b = mb.input("b", (4,), np.float32)
    y = mb.tensor("y", (1, 3, 4, 4), np.float32)
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_h=2, stride_w=2, fused_activation_function="RELU")
    mb.output(y)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 6, 7, 3), (4, 3, 3, 3), (4,))]
    check_op(mb.build(), inputs, backend)


def test_conv2d_runtime_filter_past_tile_edges(backend: str) -> None:
    """A run-time filter and bias on WebGPU's tiled product: 99 pixels x 37 channels over K = 72
    read as vec4s, at batch 2, with a fused RELU6."""
    rng = np.random.default_rng(19)
    mb = ModelBuilder()
    x = mb.input("x", (2, 9, 11, 8), np.float32)
    w = mb.input("w", (37, 3, 3, 8), np.float32)
    b = mb.input("b", (37,), np.float32)
    y = mb.tensor("y", (2, 9, 11, 37), np.float32)
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="RELU6")
    mb.output(y)
    check_op(mb.build(), [rng.standard_normal(s).astype(np.float32) for s in ((2, 9, 11, 8), (37, 3, 3, 8), (37,))],
             backend)


def _record_splits(monkeypatch, module) -> list[int]:
    """The thread counts kernels split over from now on: the variants of every compiled
    program's last stage (jit.Program), or the Python pool's (threads.run_chunks) in ``module``."""
    from gpulite.backends.cpu import jit

    seen: list[int] = []
    real_program, real_chunks = jit.program, module.run_chunks
    monkeypatch.setattr(jit, "program", lambda stages: (seen.append(len(stages[-1][0])), real_program(stages))[1])
    monkeypatch.setattr(module, "run_chunks", lambda fns: (seen.append(len(fns[0])), real_chunks(fns))[1])
    return seen


# The CPU backend with its compiled loops (and their thread pool) and without (the Python pool)
CPU_VARIANTS = pytest.mark.parametrize("backend", ["cpu", "cpu_numpy"], indirect=True)


@CPU_VARIANTS
@pytest.mark.parametrize("case", ["k3-s1-same-relu6", "k3-s2-same-none", "mult2-s1"])
def test_depthwise_threaded_matches_litert(case: str, backend: str, monkeypatch) -> None:
    """num_threads=2 deals a depthwise layer's row chunks to two threads: the compiled loops'
    pool from PROGRAM_MIN outputs per thread, the Python pool from PARALLEL_MIN (forced low here)."""
    from gpulite.backends.cpu.kernels import depthwise

    monkeypatch.setattr(depthwise, "PARALLEL_MIN", 1 << 16)  # split this layer, as a much bigger one would be
    splits = _record_splits(monkeypatch, depthwise)
    shape, k, m, stride, dil, pad, act, bias = DW_CASES[case]
    big = ((2, 128, 120, shape[3]), k, m, stride, dil, pad, act, bias)  # >= 2 * 64K outputs
    model = _float_model("DEPTHWISE_CONV_2D", big, 19)
    x = np.random.default_rng(4).standard_normal(big[0]).astype(np.float32)
    got = run_gpulite(model, [x], backend, num_threads=2)[0]
    assert got.size >= 2 * 65536
    assert 2 in splits, f"the depthwise layer was not split over two threads ({splits})"
    assert_same(got, run_litert(model, [x])[0], what="threaded depthwise")


@pytest.mark.parametrize("case", [((1, 40, 36, 8), (3, 3), 16, (1, 1), (1, 1), "SAME", "RELU6", True),
                                  ((1, 40, 36, 8), (1, 1), 24, (1, 1), (1, 1), "VALID", "RELU", True)],
                         ids=["im2col", "direct"])
@CPU_VARIANTS
def test_conv_threaded_matches_litert(case, backend: str, monkeypatch) -> None:
    """num_threads=2 deals a conv's row chunks to two threads, on the compiled loops' pool or
    the Python one (forced here for a small conv: see conv.PROGRAM_MACS and PARALLEL_MACS)."""
    from gpulite.backends.cpu.kernels import conv

    monkeypatch.setattr(conv, "PARALLEL_MACS", 1)
    monkeypatch.setattr(conv, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(conv, "PROGRAM_MACS", 1)
    monkeypatch.setattr(conv, "PROGRAM_ROWS", 1)
    monkeypatch.setattr(conv, "IM2COL_BUDGET", 1 << 12)  # several chunks per thread
    splits = _record_splits(monkeypatch, conv)
    model = _float_model("CONV_2D", case, 23)
    x = np.random.default_rng(5).standard_normal(case[0]).astype(np.float32)
    got = run_gpulite(model, [x], backend, num_threads=2)[0]
    assert splits and splits[0] == 2, f"the conv was not split over two threads ({splits})"
    assert_same(got, run_litert(model, [x])[0], what="threaded conv")
