"""Dynamic-range ("hybrid") ops against LiteRT: float input, int8 constant weights, float output.

What ``TFLiteConverter`` writes with ``optimizations=[DEFAULT]`` and no representative dataset.
LiteRT's default interpreter quantizes the input at run time (XNNPACK for CONV_2D,
FULLY_CONNECTED and BATCH_MATMUL, TFLite's builtin kernel for DEPTHWISE_CONV_2D; see
``gpulite/backends/cpu/kernels/hybrid.py``) and gpulite follows the same arithmetic, so the
outputs agree to float32 rounding: well inside rtol 1e-5, where one input value quantized
one code differently would show (about 1e-3 of the output range here).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.ops.harness import check_op

F32 = np.float32


def weights(rng, shape, channels: int, axis: int, per_channel: bool) -> tuple[np.ndarray, Quant]:
    """Random int8 weights (zero point 0, as the converter writes them) and their scales."""
    w = rng.integers(-127, 128, shape).astype(np.int8)
    scale = rng.uniform(0.002, 0.02, channels if per_channel else 1)
    return w, Quant(scale, 0, axis=axis)


def inputs(rng, shape, zero_rows: bool = False) -> np.ndarray:
    """Off-centre normal values (so the zero point is not trivial); optionally a row of zeros."""
    x = rng.normal(0.4, 1.0, shape).astype(F32)
    if zero_rows:
        x.reshape(-1, shape[-1])[1] = 0.0
    return x


def fc_model(rng, in_shape, units: int, per_channel: bool, asymmetric: bool, act: str, bias: bool,
             keep_num_dims: bool = False) -> bytes:
    depth = in_shape[-1]
    w, q = weights(rng, (units, depth), units, 0, per_channel)
    out_shape = (*in_shape[:-1], units) if keep_num_dims else (int(np.prod(in_shape[:-1])), units)
    mb = ModelBuilder()
    x = mb.input("x", in_shape, F32)
    b = mb.const("b", rng.normal(0, 1, units).astype(F32)) if bias else -1
    y = mb.tensor("y", out_shape, F32)
    mb.op("FULLY_CONNECTED", [x, mb.const("w", w, quant=q), b], [y], fused_activation_function=act,
          asymmetric_quantize_inputs=asymmetric, keep_num_dims=keep_num_dims)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric-flag", "asymmetric-flag"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("case", ["rows", "one-row-relu", "3d-keep-dims", "no-bias-zero-row"])
def test_hybrid_fully_connected(case: str, per_channel: bool, asymmetric: bool, backend: str) -> None:
    rng = np.random.default_rng(1)
    in_shape, units, act, bias, keep, zero = {
        "rows": ((5, 40), 16, "NONE", True, False, False),
        "one-row-relu": ((1, 64), 24, "RELU", True, False, False),
        "3d-keep-dims": ((2, 3, 24), 8, "RELU6", True, True, False),
        "no-bias-zero-row": ((4, 33), 7, "NONE", False, False, True),
    }[case]
    m = fc_model(rng, in_shape, units, per_channel, asymmetric, act, bias, keep)
    check_op(m, [inputs(rng, in_shape, zero)], backend)


def conv_model(rng, in_shape, out_ch: int, k: int, stride: int, padding: str, per_channel: bool,
               act: str = "NONE", dilation: int = 1, groups: int = 1) -> tuple[bytes, tuple[int, ...]]:
    n, h, w_, c = in_shape
    w, q = weights(rng, (out_ch, k, k, c // groups), out_ch, 0, per_channel)
    span = (k - 1) * dilation + 1
    size = (lambda d: -(-d // stride)) if padding == "SAME" else (lambda d: (d - span) // stride + 1)
    out_shape = (n, size(h), size(w_), out_ch)
    mb = ModelBuilder()
    x = mb.input("x", in_shape, F32)
    y = mb.tensor("y", out_shape, F32)
    mb.op("CONV_2D", [x, mb.const("w", w, quant=q), mb.const("b", rng.normal(0, 1, out_ch).astype(F32))], [y],
          padding=padding, stride_w=stride, stride_h=stride, fused_activation_function=act,
          dilation_w_factor=dilation, dilation_h_factor=dilation)
    mb.output(y)
    return mb.build(), out_shape


# (input shape, out channels, kernel, stride, padding, activation, dilation): a pointwise conv is
# quantized per pixel by LiteRT's XNNPACK (it runs it as a fully connected op), others per image.
CONVS = {
    "3x3-same": ((2, 6, 6, 8), 16, 3, 1, "SAME", "NONE", 1),
    "3x3-s2-valid-relu6": ((1, 9, 9, 5), 12, 3, 2, "VALID", "RELU6", 1),
    "pointwise": ((2, 5, 4, 24), 32, 1, 1, "VALID", "RELU", 1),
    "pointwise-s2": ((1, 6, 6, 8), 16, 1, 2, "SAME", "NONE", 1),
    "pointwise-1x1-image": ((1, 1, 1, 40), 32, 1, 1, "VALID", "NONE", 1),
    "dilated": ((1, 9, 9, 4), 8, 3, 1, "SAME", "NONE", 2),
}


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("case", list(CONVS))
def test_hybrid_conv2d(case: str, per_channel: bool, backend: str) -> None:
    rng = np.random.default_rng(2)
    in_shape, o, k, s, pad, act, dil = CONVS[case]
    m, _ = conv_model(rng, in_shape, o, k, s, pad, per_channel, act, dil)
    check_op(m, [inputs(rng, in_shape)], backend)


# Grouped (litert-torch's dynamic-range ResNeXt / ShuffleNet v1 exports): (input shape, out
# channels, kernel, stride, padding, activation, groups). XNNPACK quantizes the whole image
# once, a pointwise grouped conv included (only an ungrouped one becomes a fully connected op).
GROUPED = {
    "g4-3x3-same": ((1, 6, 6, 16), 16, 3, 1, "SAME", "RELU", 4),
    "g2-3x3-s2-valid-batch2": ((2, 7, 7, 8), 12, 3, 2, "VALID", "NONE", 2),
    "g4-pointwise": ((1, 5, 5, 32), 32, 1, 1, "VALID", "RELU6", 4),
}


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("case", list(GROUPED))
def test_hybrid_grouped_conv2d(case: str, per_channel: bool, backend: str) -> None:
    rng = np.random.default_rng(5)
    in_shape, o, k, s, pad, act, groups = GROUPED[case]
    m, _ = conv_model(rng, in_shape, o, k, s, pad, per_channel, act, groups=groups)
    check_op(m, [inputs(rng, in_shape)], backend)


def test_hybrid_conv2d_with_fused_pad_and_epilogue(backend: str) -> None:
    """PAD -> pointwise hybrid conv -> HARD_SWISH -> ADD(residual): the CPU backend fuses the
    float steps after the conv, and must not fold the PAD into it (LiteRT quantizes the
    padded tensor per pixel)."""
    rng = np.random.default_rng(3)
    w, q = weights(rng, (8, 1, 1, 8), 8, 0, True)
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 8), F32)
    p = mb.tensor("p", (1, 6, 6, 8), F32)
    mb.op("PAD", [x, mb.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [p])
    c = mb.tensor("c", (1, 6, 6, 8), F32)
    mb.op("CONV_2D", [p, mb.const("w", w, quant=q), mb.const("b", rng.normal(0, 1, 8).astype(F32))], [c],
          padding="VALID", stride_w=1, stride_h=1)
    hs = mb.tensor("hs", (1, 6, 6, 8), F32)
    mb.op("HARD_SWISH", [c], [hs])
    y = mb.tensor("y", (1, 6, 6, 8), F32)
    mb.op("ADD", [hs, p], [y])
    mb.output(y)
    check_op(mb.build(), [inputs(rng, (1, 4, 4, 8))], backend)


def depthwise_model(rng, in_shape, mult: int, stride: int, padding: str, per_channel: bool,
                    act: str = "NONE") -> bytes:
    n, h, w_, c = in_shape
    co = c * mult
    w, q = weights(rng, (1, 3, 3, co), co, 3, per_channel)
    size = (lambda d: -(-d // stride)) if padding == "SAME" else (lambda d: (d - 3) // stride + 1)
    mb = ModelBuilder()
    x = mb.input("x", in_shape, F32)
    y = mb.tensor("y", (n, size(h), size(w_), co), F32)
    mb.op("DEPTHWISE_CONV_2D", [x, mb.const("w", w, quant=q), mb.const("b", rng.normal(0, 1, co).astype(F32))],
          [y], padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=mult,
          fused_activation_function=act)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("case", ["same", "mult2-relu", "s2-valid-batch2"])
def test_hybrid_depthwise(case: str, backend: str) -> None:
    rng = np.random.default_rng(4)
    in_shape, mult, stride, pad, act = {
        "same": ((1, 7, 7, 16), 1, 1, "SAME", "NONE"),
        "mult2-relu": ((1, 6, 6, 8), 2, 1, "SAME", "RELU"),
        "s2-valid-batch2": ((2, 9, 9, 6), 1, 2, "VALID", "RELU6"),
    }[case]
    check_op(depthwise_model(rng, in_shape, mult, stride, pad, True, act), [inputs(rng, in_shape)], backend)


def test_hybrid_depthwise_per_tensor_is_refused() -> None:
    """LiteRT's hybrid depthwise needs per-channel filter scales (depthwise_conv.cc refuses one
    scale for several channels); gpulite refuses it at allocate_tensors, naming the need."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    m = depthwise_model(np.random.default_rng(5), (1, 6, 6, 8), 1, 1, "SAME", False)
    with pytest.raises(RuntimeError):
        LiteRT(model_content=m).allocate_tensors()
    it = Interpreter(model_content=m, backend="cpu")
    with pytest.raises(UnsupportedOpError, match="8 scales on axis 3"):
        it.allocate_tensors()


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("case", ["plain", "adj-y", "adj-x-batched", "broadcast-rhs"])
def test_hybrid_batch_matmul(case: str, per_channel: bool, backend: str) -> None:
    rng = np.random.default_rng(6)
    lhs, rhs, adj_x, adj_y = {
        "plain": ((2, 3, 8), (2, 8, 5), False, False),
        "adj-y": ((1, 4, 16), (1, 6, 16), False, True),
        "adj-x-batched": ((3, 8, 4), (3, 8, 6), True, False),
        "broadcast-rhs": ((2, 3, 12), (12, 5), False, False),
    }[case]
    n = rhs[-2] if adj_y else rhs[-1]
    w, q = weights(rng, rhs, n, len(rhs) - (2 if adj_y else 1), per_channel)
    m_rows = lhs[-1] if adj_x else lhs[-2]
    out = (*np.broadcast_shapes(lhs[:-2], rhs[:-2]), m_rows, n)
    mb = ModelBuilder()
    x = mb.input("x", lhs, F32)
    y = mb.tensor("y", out, F32)
    mb.op("BATCH_MATMUL", [x, mb.const("w", w, quant=q)], [y], adj_x=adj_x, adj_y=adj_y)
    mb.output(y)
    check_op(mb.build(), [inputs(rng, lhs)], backend)
