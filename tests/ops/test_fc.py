"""FULLY_CONNECTED (float, int8/uint8) and BATCH_MATMUL against LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.ops.harness import check_op, run_litert
from tests.ops.quant_ref import check_quantized

# id: (input shape, units, keep_num_dims, bias, activation)
FC_CASES = {
    "2d-relu": ((3, 10), 7, False, True, "RELU"),
    "4d-flatten": ((1, 2, 2, 8), 5, False, True, "NONE"),
    "4d-keep-dims-relu6": ((1, 2, 2, 8), 5, True, True, "RELU6"),
    "3d-flatten-across-dims": ((2, 3, 4), 6, False, True, "RELU_N1_TO_1"),
    "3d-keep-dims": ((2, 3, 4), 6, True, True, "NONE"),
    "nobias": ((4, 16), 9, False, False, "NONE"),
    "hand-landmark": ((1, 1, 1, 1152), 63, False, True, "NONE"),
    "4d-flatten-all-nobias": ((1, 4, 4, 3), 10, False, False, "NONE"),
    # The WebGPU tiled product's edges (kernels/gemm.py): 70 rows x 45 units over K = 37 (no
    # vec4 rows); one row with K = 5000 (K split across workgroups, then summed); 700 x 100
    # outputs (4 rows per thread).
    "gemm-edges": ((70, 37), 45, False, True, "RELU"),
    "gemm-rows4": ((700, 20), 100, False, True, "RELU"),
    "gemm-one-row-split": ((1, 5000), 7, False, True, "NONE"),
}
FC_DEPTH = {"3d-flatten-across-dims": 12, "4d-flatten-all-nobias": 48}


def _fc_out_shape(shape, depth, units, keep):
    return (*tuple(shape[:-1]), units) if keep else (int(np.prod(shape)) // depth, units)


def _fc_depth(case: str) -> int:
    # Weights of depth != the last dim: each row spans several input dims (TFLite only needs
    # size % depth == 0): "3d-flatten-across-dims" takes rows of 12 (= 3*4), the other the whole input.
    return FC_DEPTH.get(case, FC_CASES[case][0][-1])


@pytest.mark.parametrize("case", FC_CASES)
def test_fully_connected_float(case: str, backend: str) -> None:
    shape, units, keep, has_bias, act = FC_CASES[case]
    depth = _fc_depth(case)
    rng = np.random.default_rng(30)
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    w = mb.const("w", rng.standard_normal((units, depth)).astype(np.float32))
    b = mb.const("b", rng.standard_normal(units).astype(np.float32)) if has_bias else -1
    y = mb.tensor("y", _fc_out_shape(shape, depth, units, keep), np.float32)
    mb.op("FULLY_CONNECTED", [x, w, b], [y], keep_num_dims=keep, fused_activation_function=act)
    mb.output(y)
    check_op(mb.build(), [rng.standard_normal(shape).astype(np.float32)], backend)


@pytest.mark.parametrize("rows,depth,units,has_bias,act", [(3, 6, 4, False, "NONE"), (35, 37, 33, True, "RELU")],
                         ids=["small", "gemm-edges-bias-relu"])
def test_fully_connected_runtime_weights(rows: int, depth: int, units: int, has_bias: bool, act: str,
                                         backend: str) -> None:
    """Weights fed as a graph input, not a constant (the second case: 35 x 33 outputs over K = 37,
    past the WebGPU tiles' edges, with a constant bias and a fused activation)."""
    rng = np.random.default_rng(31)
    mb = ModelBuilder()
    x = mb.input("x", (rows, depth), np.float32)
    w = mb.input("w", (units, depth), np.float32)
    b = mb.const("b", rng.standard_normal(units).astype(np.float32)) if has_bias else -1
    y = mb.tensor("y", (rows, units), np.float32)
    mb.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function=act)
    mb.output(y)
    check_op(mb.build(), [rng.standard_normal((rows, depth)).astype(np.float32),
                          rng.standard_normal((units, depth)).astype(np.float32)], backend)


def _fc_quant_model(case, kind: str, seed: int) -> tuple[bytes, np.ndarray]:
    shape, units, keep, has_bias, act = FC_CASES[case]
    depth = _fc_depth(case)
    rng = np.random.default_rng(seed)
    sixteen = kind.startswith("int16x8")  # int16 activations (zero point 0), int8 weights, int64 bias
    dt = np.int16 if sixteen else np.uint8 if kind.startswith("uint8") else np.int8
    s_in, zp_in = (0.001, 0) if sixteen else (0.04, -9 if dt == np.int8 else 117)
    x_max = 3000 if sixteen else 128
    if kind.endswith("per-channel"):
        w_scale = rng.uniform(0.004, 0.02, units).astype(np.float32)
    else:
        w_scale = np.float32(0.013)
    if dt != np.uint8:
        wq, w_zp = rng.integers(-127, 128, (units, depth)).astype(np.int8), 0
    else:
        wq, w_zp = rng.integers(0, 256, (units, depth)).astype(np.uint8), 130
    s_out = float(np.sqrt(depth) * 74 * (x_max * 74 // 128) * s_in * np.max(w_scale) * 3 / (32767 if sixteen else 127))
    mb = ModelBuilder()
    x = mb.input("x", shape, dt, quant=(s_in, zp_in))
    w = mb.const("w", wq, quant=Quant(scale=w_scale, zero_point=np.full(np.size(w_scale), w_zp, np.int64)))
    b = -1
    if has_bias:
        b_scale = (np.float32(s_in) * np.atleast_1d(w_scale)).astype(np.float32)
        b = mb.const("b", rng.integers(-4000, 4000, units).astype(np.int64 if sixteen else np.int32),
                     quant=Quant(scale=b_scale, zero_point=np.zeros(b_scale.size, np.int64)))
    zp_out = 0 if sixteen else (3 if dt == np.int8 else 128)
    y = mb.tensor("y", _fc_out_shape(shape, depth, units, keep), dt, quant=(s_out, zp_out))
    mb.op("FULLY_CONNECTED", [x, w, b], [y], keep_num_dims=keep, fused_activation_function=act)
    mb.output(y)
    lo, hi = (-x_max, x_max) if sixteen else (np.iinfo(dt).min, np.iinfo(dt).max + 1)
    return mb.build(), rng.integers(lo, hi, shape).astype(dt)


# Default LiteRT (XNNPACK fp32 requantization), which gpulite matches exactly, puts a few outputs
# of these one code away from TFLite's reference kernels (see tests/ops/quant_ref.py).
FC_OPTIMIZED_ROUNDING = set()


@pytest.mark.parametrize("kind", ["int8-per-tensor", "int8-per-channel", "uint8-per-tensor"])
@pytest.mark.parametrize("case", ["2d-relu", "4d-flatten", "4d-keep-dims-relu6", "3d-keep-dims",
                                  "nobias", "hand-landmark"])
def test_fully_connected_quantized(case: str, kind: str, backend: str) -> None:
    model, x = _fc_quant_model(case, kind, 32)
    check_quantized(model, [x], backend, int_tol=int((case, kind) in FC_OPTIMIZED_ROUNDING), oracle="default")


@pytest.mark.parametrize("kind", ["int16x8-per-tensor", "int16x8-per-channel"])
@pytest.mark.parametrize("case", ["2d-relu", "4d-flatten", "3d-keep-dims", "nobias", "hand-landmark"])
def test_fully_connected_int16x8(case: str, kind: str, backend: str) -> None:
    """16x8 FC: int64 accumulators rescaled by the int64 MultiplyByQuantizedMultiplier, exact."""
    model, x = _fc_quant_model(case, kind, 38)
    check_quantized(model, [x], backend)


def test_fully_connected_fused_tanh_is_rejected() -> None:
    """LiteRT refuses FC with a fused TANH at prepare; gpulite refuses at allocate_tensors."""
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), np.float32)
    w = mb.const("w", np.ones((4, 3), np.float32))
    y = mb.tensor("y", (2, 4), np.float32)
    mb.op("FULLY_CONNECTED", [x, w, -1], [y], fused_activation_function="TANH")
    mb.output(y)
    with pytest.raises(UnsupportedOpError, match="TANH"):
        Interpreter(model_content=mb.build()).allocate_tensors()


# id: (lhs shape, rhs shape, adj_x, adj_y, rhs constant)
BMM_CASES = {
    "plain": ((2, 3, 4), (2, 4, 5), False, False, False),
    "adj_x": ((2, 4, 3), (2, 4, 5), True, False, False),
    "adj_y": ((2, 3, 4), (2, 5, 4), False, True, False),
    "adj_xy": ((2, 4, 3), (2, 5, 4), True, True, False),
    "broadcast-4d": ((2, 1, 3, 4), (1, 5, 4, 6), False, False, False),
    "broadcast-rank": ((3, 4), (2, 4, 5), False, False, False),
    "const-rhs-adj_y": ((1, 6, 8), (1, 7, 8), False, True, True),
    "rank2": ((5, 3), (3, 2), False, False, False),
    # The WebGPU tiled product's edges (kernels/gemm.py): 40 x 33 outputs over K = 37 in 3
    # batches; K = 4500 (split across workgroups) with adj_x.
    "gemm-edges": ((3, 40, 37), (3, 37, 33), False, False, False),
    "gemm-split-adj_x": ((1, 4500, 2), (1, 4500, 3), True, False, False),
    # Both operands read as vec4s (k = 12, n = 40: B's last vec4 ends a tile early), batch dims
    # broadcast both ways.
    "gemm-vec4-broadcast": ((2, 1, 35, 12), (1, 3, 12, 40), False, False, False),
}


@pytest.mark.parametrize("case", BMM_CASES)
def test_batch_matmul(case: str, backend: str) -> None:
    sa, sb, adj_x, adj_y, const_rhs = BMM_CASES[case]
    rng = np.random.default_rng(33)
    a_val, b_val = (rng.standard_normal(s).astype(np.float32) for s in (sa, sb))
    av = np.swapaxes(a_val, -1, -2) if adj_x else a_val
    bv = np.swapaxes(b_val, -1, -2) if adj_y else b_val
    out_shape = np.matmul(av, bv).shape
    mb = ModelBuilder()
    a = mb.input("a", sa, np.float32)
    b = mb.const("b", b_val) if const_rhs else mb.input("b", sb, np.float32)
    y = mb.tensor("y", out_shape, np.float32)
    mb.op("BATCH_MATMUL", [a, b], [y], adj_x=adj_x, adj_y=adj_y)
    mb.output(y)
    check_op(mb.build(), [a_val] if const_rhs else [a_val, b_val], backend)


@pytest.mark.parametrize("kind", ["int8-per-tensor", "int8-per-channel", "uint8-per-tensor"])
def test_fc_rescale_rounding_matches_litert_on_many_outputs(kind: str, backend: str) -> None:
    """32K outputs: enough exact-half cases that a wrong rescale misses some; exact against
    default LiteRT (XNNPACK's float32 requantization), within a code of the reference kernel's
    single rounding."""
    dt = np.uint8 if kind.startswith("uint8") else np.int8
    rng = np.random.default_rng(34)
    wz, oz = (0, 0) if dt == np.int8 else (128, 128)
    s_in = 0.031
    s_w = rng.uniform(0.01, 0.014, 64).astype(np.float32) if kind.endswith("per-channel") else np.float32(0.0123)
    mb = ModelBuilder()
    x = mb.input("x", (512, 2), dt, quant=(s_in, 0))
    w = mb.const("w", (rng.integers(-20, 20, (64, 2)) + wz).astype(dt),
                 quant=Quant(scale=s_w, zero_point=np.full(np.size(s_w), wz, np.int64)))
    b_scale = (np.float32(s_in) * np.atleast_1d(s_w)).astype(np.float32)
    b = mb.const("b", rng.integers(-50, 50, 64).astype(np.int32),
                 quant=Quant(scale=b_scale, zero_point=np.zeros(b_scale.size, np.int64)))
    y = mb.tensor("y", (512, 64), dt, quant=(0.17, oz))
    mb.op("FULLY_CONNECTED", [x, w, b], [y])
    mb.output(y)
    info = np.iinfo(dt)
    xv = rng.integers(info.min, info.max + 1, (512, 2)).astype(dt)
    check_quantized(mb.build(), [xv], backend, int_tol=1, oracle="default")


# variant -> the kernel default LiteRT 2.3 runs the FULLY_CONNECTED on
FC_TIE_CASES = {"int8-per-channel": "xnnpack", "int8-per-tensor": "xnnpack", "uint8": "xnnpack",
                "int8-bias-at-run-time": "builtin", "int8-weight-zero-point": "builtin", "uint8-axis1": "builtin"}


@pytest.mark.parametrize("variant", FC_TIE_CASES)
def test_fc_rescale_ties_match_default_litert(variant: str, backend: str) -> None:
    """Power-of-two scales (rescale factors 2**-2 .. 2**-4) and small products: many ties of the
    rescale's roundings. Exact against default LiteRT, whichever kernel it runs (asserted):
    XNNPACK's float32 requantization (halves to even), or where its delegate declines the op (a
    bias fed at run time, an int8 weight zero point, a uint8 weight quantized along dimension 1)
    the optimized builtin kernel's ruy rounding (halves up), where the reference kernel rounds
    once away from zero."""
    from tests.ops.test_conv import litert_kernel

    rng = np.random.default_rng(50)
    uint = variant.startswith("uint8")
    dt = np.uint8 if uint else np.int8
    zin, zw, zout = (131, 133, 123) if uint else (3, 2 if variant.endswith("zero-point") else 0, -5)
    units, depth = 13, 24
    s_w = np.float32(2.0) ** -(5 + np.arange(units if variant == "int8-per-channel" else 1) % 3).astype(np.float32)
    mb = ModelBuilder()
    x = mb.input("x", (6, depth), dt, quant=(0.0625, zin))
    w = mb.const("w", (rng.integers(-4, 5, (units, depth)) + zw).astype(dt),
                 quant=Quant(s_w, np.full(s_w.size, zw, np.int64), axis=1 if variant == "uint8-axis1" else 0))
    bq = Quant(np.float32(0.0625) * s_w, np.zeros(s_w.size, np.int64))
    bv = rng.integers(-20, 20, units).astype(np.int32)
    runtime_bias = variant == "int8-bias-at-run-time"
    b = mb.input("b", (units,), np.int32, quant=bq) if runtime_bias else mb.const("b", bv, quant=bq)
    y = mb.tensor("y", (6, units), dt, quant=(2.0 ** -7, zout))
    mb.op("FULLY_CONNECTED", [x, w, b], [y])
    mb.output(y)
    model = mb.build()
    assert litert_kernel(model) == FC_TIE_CASES[variant]
    inputs = [(rng.integers(-40, 40, (6, depth)) + zin).astype(dt), *([bv] if runtime_bias else [])]
    ref = check_quantized(model, inputs, backend, int_tol=1, oracle="default")
    assert not np.array_equal(ref, run_litert(model, inputs)[0]), "no tie: the case proves nothing"


@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected_resized_input(keep: bool, backend: str) -> None:
    """resize_tensor_input on the batch dims: the shape rule flattens rows as TFLite does."""
    rng = np.random.default_rng(35)
    mb = ModelBuilder()
    x = mb.input("x", (2, 3, 8), np.float32)
    w = mb.const("w", rng.standard_normal((5, 8)).astype(np.float32))
    b = mb.const("b", rng.standard_normal(5).astype(np.float32))
    y = mb.tensor("y", (2, 3, 5) if keep else (6, 5), np.float32)
    mb.op("FULLY_CONNECTED", [x, w, b], [y], keep_num_dims=keep)
    mb.output(y)
    check_op(mb.build(), [rng.standard_normal((4, 7, 8)).astype(np.float32)], backend)


def test_batch_matmul_resized_input(backend: str) -> None:
    rng = np.random.default_rng(36)
    mb = ModelBuilder()
    a = mb.input("a", (1, 3, 4), np.float32)
    b = mb.const("b", rng.standard_normal((4, 6)).astype(np.float32))
    y = mb.tensor("y", (1, 3, 6), np.float32)
    mb.op("BATCH_MATMUL", [a, b], [y])
    mb.output(y)
    check_op(mb.build(), [rng.standard_normal((5, 7, 4)).astype(np.float32)], backend)


# (dtype, (s_lhs, zp_lhs, s_rhs, zp_rhs, s_out, zp_out)): LiteRT rescales int8 with XNNPACK's
# float32 requantization where the RHS zero point is 0 (its delegate takes those) and twice
# (reference kernel) otherwise; int16 with the int64 overload's 16-bit multiplier. 64K outputs
# each, so a wrong rounding shows (measured: dozens of codes differ between single and double
# rounding; ties of the float32 requantization: test_batch_matmul_int8_ties_match_default_litert).
QBMM_CASES = {
    "int8-rhs-zp0": (np.int8, (0.02, -10, 0.03, 0, 0.4, 7)),
    "int8-rhs-zp0-lhs-zp0": (np.int8, (0.013, 0, 0.021, 0, 0.9, 0)),
    "int8-rhs-zp5": (np.int8, (0.02, -10, 0.03, 5, 0.4, 7)),
    "int16": (np.int16, (0.02, 0, 0.03, 0, 20.0, 0)),
}


@pytest.mark.parametrize("const_rhs", [False, True], ids=["rhs-input", "rhs-const"])
@pytest.mark.parametrize("case", list(QBMM_CASES))
def test_batch_matmul_quantized(case: str, const_rhs: bool, backend: str) -> None:
    dt, (sl, zl, sr, zr, so, zo) = QBMM_CASES[case]
    rng = np.random.default_rng(37)
    lo, hi = (-128, 128) if dt == np.int8 else (-3000, 3000)
    lhs, rhs = rng.integers(lo, hi, (4, 128, 96)).astype(dt), rng.integers(lo, hi, (4, 96, 128)).astype(dt)
    mb = ModelBuilder()
    a = mb.input("a", lhs.shape, dt, quant=(sl, zl))
    b = mb.const("b", rhs, quant=(sr, zr)) if const_rhs else mb.input("b", rhs.shape, dt, quant=(sr, zr))
    y = mb.tensor("y", (4, 128, 128), dt, quant=(so, zo))
    mb.op("BATCH_MATMUL", [a, b], [y])
    mb.output(y)
    check_op(mb.build(), [lhs] if const_rhs else [lhs, rhs], backend)


@pytest.mark.parametrize("const_rhs", [False, True], ids=["rhs-input", "rhs-const"])
def test_batch_matmul_int8_ties_match_default_litert(const_rhs: bool, backend: str) -> None:
    """int8 BATCH_MATMUL with RHS zero point 0, which default LiteRT runs in XNNPACK: power-of-two
    scales (rescale factor 2**-4) and small products put many sums on a tie, where XNNPACK's
    float32 requantization (halves to even) parts from the reference kernel's single rounding."""
    from tests.ops.test_conv import litert_kernel

    rng = np.random.default_rng(51)
    lhs, rhs = rng.integers(-40, 40, (2, 6, 16)).astype(np.int8), rng.integers(-9, 9, (2, 16, 10)).astype(np.int8)
    mb = ModelBuilder()
    a = mb.input("a", lhs.shape, np.int8, quant=(0.0625, 3))
    bq = (2.0 ** -5, 0)
    b = mb.const("b", rhs, quant=bq) if const_rhs else mb.input("b", rhs.shape, np.int8, quant=bq)
    y = mb.tensor("y", (2, 6, 10), np.int8, quant=(2.0 ** -7, -5))
    mb.op("BATCH_MATMUL", [a, b], [y])
    mb.output(y)
    model, inputs = mb.build(), [lhs] if const_rhs else [lhs, rhs]
    assert litert_kernel(model) == "xnnpack"
    ref = check_quantized(model, inputs, backend, int_tol=1, oracle="default")
    assert not np.array_equal(ref, run_litert(model, inputs)[0]), "no tie: the case proves nothing"
