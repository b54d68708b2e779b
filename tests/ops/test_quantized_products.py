"""Quantized matrix products at the edges of the WebGPU integer kernels (kernels/qgemm.py,
qconv.py), bit for bit against default LiteRT for the convs (XNNPACK or its optimized builtin
kernels: ``quantized_conv.conv_rescale``) and LiteRT's reference kernels for the rest, on every
backend.

- dot products longer than one thread's share (1024 products): the two-pass path (64-bit
  partial sums, then the rescale);
- channels in fours: the 8-bit word path (four codes of a word loaded and multiplied at once);
- outputs whose count is no multiple of 4 (int8) or 2 (int16), and channel counts that are no
  multiple of 4, so a thread's word of codes straddles pixels and the last word is partial;
- 16x8 sums past int32 (LiteRT's int64 accumulators), per-channel and per-tensor weights,
  uint8, fused RELU / RELU6 / RELU_N1_TO_1, BATCH_MATMUL's adj_x / adj_y and broadcast batches.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.ops.harness import check_op
from tests.ops.quant_ref import check_quantized
from tests.ops.test_conv import TCONV_CASES, _quant_model, _tconv_quant_model

# (input NHWC, kernel, out channels / depth multiplier, stride, dilation, padding, activation, bias)
CONV_EDGES = {
    "long-k-c7": ((1, 5, 5, 160), (3, 3), 7, (1, 1), (1, 1), "SAME", "RELU", True),  # K = 1440: two slices
    "long-1x1-c3": ((1, 4, 5, 2100), (1, 1), 3, (1, 1), (1, 1), "VALID", "NONE", True),  # K = 2100: three
    "odd-c5-s2": ((2, 7, 6, 5), (3, 3), 9, (2, 2), (1, 1), "SAME", "RELU_N1_TO_1", False),
    # channels in fours: the 8-bit word path (four input and four output channels a step)
    "words-c8-o12": ((2, 7, 6, 8), (3, 3), 12, (1, 1), (1, 1), "SAME", "RELU6", True),  # 4-pixel blocks
    "c3-o16-s2": ((1, 9, 10, 3), (3, 3), 16, (2, 2), (1, 1), "SAME", "RELU6", True),  # blocked, a channel a step
    "words-long-c128-o8": ((1, 4, 5, 128), (3, 3), 8, (2, 2), (1, 1), "SAME", "NONE", True),  # K = 1152
}
DW_EDGES = {
    "c5-mult3-s2": ((1, 6, 5, 5), (3, 3), 3, (2, 2), (1, 1), "SAME", "RELU6", True),  # 135 outputs
    "c3-k5-valid": ((1, 9, 8, 3), (5, 5), 1, (1, 1), (1, 1), "VALID", "RELU", True),
    "words-c8-s2": ((2, 9, 7, 8), (3, 3), 1, (2, 2), (1, 1), "SAME", "RELU", True),  # the word path, 4-pixel blocks
}
KINDS = ["int8-per-channel", "int8-per-tensor", "uint8-per-tensor", "int16x8-per-channel"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CONV_EDGES)
def test_conv_edges(case: str, kind: str, backend: str) -> None:
    model, x = _quant_model("CONV_2D", CONV_EDGES[case], kind, 41)
    ref_model = _quant_model("CONV_2D", CONV_EDGES[case], kind, 41, zero_bias=True)[0]
    check_quantized(model, [x], backend, int_tol=1, ref_model=ref_model, oracle="default")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", DW_EDGES)
def test_depthwise_edges(case: str, kind: str, backend: str) -> None:
    model, x = _quant_model("DEPTHWISE_CONV_2D", DW_EDGES[case], kind, 42)
    ref_model = _quant_model("DEPTHWISE_CONV_2D", DW_EDGES[case], kind, 42, zero_bias=True)[0]
    check_quantized(model, [x], backend, int_tol=1, ref_model=ref_model, oracle="default")


def _fc(dt, w_scale, act: str, x_codes: np.ndarray, w_codes: np.ndarray, s_out: float, rng) -> bytes:
    sixteen = dt == np.int16
    (rows, depth), units = x_codes.shape, w_codes.shape[0]
    s_in, zp_in = (0.0005, 0) if sixteen else (0.04, 0 if dt == np.int8 else 120)
    w_zp = 130 if dt == np.uint8 else 0
    mb = ModelBuilder()
    x = mb.input("x", (rows, depth), dt, quant=(s_in, zp_in))
    w = mb.const("w", w_codes, quant=Quant(scale=w_scale, zero_point=np.full(np.size(w_scale), w_zp, np.int64)))
    b_scale = (np.float32(s_in) * np.atleast_1d(w_scale)).astype(np.float32)
    b = mb.const("b", rng.integers(-4000, 4000, units).astype(np.int64 if sixteen else np.int32),
                 quant=Quant(scale=b_scale, zero_point=np.zeros(b_scale.size, np.int64)))
    y = mb.tensor("y", (rows, units), dt, quant=(s_out, 0 if sixteen else 2 if dt == np.int8 else 127))
    mb.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function=act)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("depth,units", [(2500, 7), (2500, 8), (64, 12)],
                         ids=["k2500-units7", "k2500-units8-words", "k64-units12-words"])
@pytest.mark.parametrize("dt,per_channel", [(np.int8, True), (np.int8, False), (np.uint8, False), (np.int16, True)],
                         ids=["int8-per-channel", "int8-per-tensor", "uint8-per-tensor", "int16x8-per-channel"])
def test_fully_connected_long_rows(dt, per_channel: bool, depth: int, units: int, backend: str) -> None:
    """K = 2500 (three slices) by 3 rows: 7 units (21 outputs, a partial last word) or 8 (the
    8-bit word path: four units and four features a step); K = 64 by 12 units: the word path in
    one pass."""
    rng = np.random.default_rng(43)
    rows = 3
    info = np.iinfo(dt)
    lo, hi = (-3000, 3000) if dt == np.int16 else (info.min, info.max + 1)
    x = rng.integers(lo, hi, (rows, depth)).astype(dt)
    w = rng.integers(0, 256, (units, depth)).astype(np.uint8) if dt == np.uint8 else \
        rng.integers(-127, 128, (units, depth)).astype(np.int8)
    w_scale = rng.uniform(0.004, 0.02, units).astype(np.float32) if per_channel else np.float32(0.011)
    s_in = 0.0005 if dt == np.int16 else 0.04
    spread = np.sqrt(depth) * 74 * (74 * (hi - lo) // 256) * s_in * float(np.max(w_scale))
    s_out = float(spread * 3 / (32767 if dt == np.int16 else 127))
    check_quantized(_fc(dt, w_scale, "RELU", x, w, s_out, rng), [x], backend, int_tol=1)


def test_fully_connected_int16_sums_past_int32(backend: str) -> None:
    """16x8 sums up to 2^33 (inputs near +-32767 aligned with the weights' signs): LiteRT
    accumulates in int64; an int32 accumulator would wrap."""
    rng = np.random.default_rng(44)
    rows, depth, units = 5, 2048, 6
    sign = rng.choice([-1, 1], depth)
    x = (rng.integers(10000, 32768, (rows, 1)) * sign).astype(np.int16)
    w = (rng.integers(60, 128, (units, 1)) * sign).astype(np.int8)
    acc = np.abs(x.astype(np.int64) @ w.T.astype(np.int64)).max()
    assert acc > 2**32
    w_scale = np.float32(0.011)
    check_quantized(_fc(np.int16, w_scale, "NONE", x, w, acc * 0.0005 * 0.011 / 30000, rng), [x], backend)


# (LHS shape, RHS shape, adj_x, adj_y, dtype, rhs zero point)
BMM_EDGES = {
    "adj-x-broadcast-int8": ((2, 1, 37, 9), (3, 37, 11), True, False, np.int8, 0),
    "adj-y-zp-int8": ((3, 7, 29), (13, 29), False, True, np.int8, 6),
    "long-k-int16": ((2, 5, 1100), (1100, 3), False, False, np.int16, 0),
}


@pytest.mark.parametrize("case", BMM_EDGES)
def test_batch_matmul_edges(case: str, backend: str) -> None:
    a_shape, b_shape, adj_x, adj_y, dt, zr = BMM_EDGES[case]
    rng = np.random.default_rng(45)
    sixteen = dt == np.int16
    lo, hi = (-3000, 3000) if sixteen else (-128, 128)
    lhs, rhs = rng.integers(lo, hi, a_shape).astype(dt), rng.integers(lo, hi, b_shape).astype(dt)
    m = a_shape[-1] if adj_x else a_shape[-2]
    k = a_shape[-2] if adj_x else a_shape[-1]
    n = b_shape[-2] if adj_y else b_shape[-1]
    batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    s_out = float(np.sqrt(k) * (hi - lo) ** 2 / 12 * 0.02 * 0.03 * 3 / (32767 if sixteen else 127))
    mb = ModelBuilder()
    a = mb.input("a", a_shape, dt, quant=(0.02, 0 if sixteen else -3))
    b = mb.input("b", b_shape, dt, quant=(0.03, zr))
    y = mb.tensor("y", (*batch, m, n), dt, quant=(s_out, 0 if sixteen else 4))
    mb.op("BATCH_MATMUL", [a, b], [y], adj_x=adj_x, adj_y=adj_y)
    mb.output(y)
    check_op(mb.build(), [lhs, rhs], backend)


@pytest.mark.parametrize("kind", ["int8", "int16"])
def test_transpose_conv_long(kind: str, backend: str, monkeypatch) -> None:
    """K = 3 * 3 * 120 = 1080 products per output (two slices), 5 channels, fused RELU6."""
    monkeypatch.setitem(TCONV_CASES, "long", ((1, 3, 4, 120), (3, 3), 5, (2, 2), "SAME", (6, 8), True, "RELU6"))
    model, x = _tconv_quant_model("long", kind, True, np.random.default_rng(46))
    check_quantized(model, [x], backend, int_tol=1, oracle="default")


def test_conv_int16_sums_past_int32(backend: str) -> None:
    """A 16x8 1x1 CONV_2D of 1,000 channels (one thread's share, register-blocked) whose sums
    reach 2^32: the int32 partial sums must go into int64 before they overflow."""
    rng = np.random.default_rng(47)
    cin, cout = 1000, 8
    sign = rng.choice([-1, 1], cin)
    x = (rng.integers(10000, 32768, (1, 2, 3, 1)) * sign).astype(np.int16)
    w = (rng.integers(60, 128, (cout, 1, 1, 1)) * sign.reshape(1, 1, 1, cin)).astype(np.int8)
    acc = np.abs(x.reshape(-1, cin).astype(np.int64) @ w.reshape(cout, cin).T.astype(np.int64)).max()
    assert acc > 2**31
    s_in, s_w = 0.0005, 0.011
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, np.int16, quant=(s_in, 0))
    wi = mb.const("w", w, quant=Quant(scale=np.full(cout, s_w, np.float32), zero_point=np.zeros(cout, np.int64),
                                       axis=0))
    b = mb.const("b", np.zeros(cout, np.int64), quant=Quant(scale=np.full(cout, s_in * s_w, np.float32),
                                                           zero_point=np.zeros(cout, np.int64)))
    y = mb.tensor("y", (1, 2, 3, cout), np.int16, quant=(float(acc * s_in * s_w / 30000), 0))
    mb.op("CONV_2D", [xi, wi, b], [y], padding="VALID", stride_h=1, stride_w=1)
    mb.output(y)
    check_quantized(mb.build(), [x], backend)
