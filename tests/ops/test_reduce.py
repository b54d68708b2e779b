"""MEAN, SUM, REDUCE_MAX, REDUCE_MIN against LiteRT: axis sets (negative, repeated, all),
keep_dims, float/int32 and int8 quantized MEAN."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op
from tests.ops.quant_ref import run_litert_reference
from tests.ops.single_op import C, In, single_op

RNG = np.random.default_rng(7)
AXES = {
    "spatial": [1, 2],
    "spatial-rev": [2, 1],
    "channels": [3],
    "negative": [-1, -3],
    "repeated": [1, -3],
    "batch": [0],
    "batch-rows": [0, 1],
    "all": [0, 1, 2, 3],
    "single-int": 2,
}


def _axes(a) -> np.ndarray:
    return np.array(a, np.int32)


@pytest.mark.parametrize("keep", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_float(op, axes, keep, backend):
    x = RNG.standard_normal((2, 5, 7, 3)).astype(np.float32)
    check_op(*single_op(op, [In(x), C(_axes(AXES[axes]))], keep_dims=keep), backend)


def test_mean_large_spatial(backend):
    """The selfie model's squeeze-excite MEAN: 36x64 pixels, 16 channels, keep_dims."""
    x = RNG.standard_normal((1, 36, 64, 16)).astype(np.float32)
    check_op(*single_op("MEAN", [In(x), C(_axes([1, 2]))], keep_dims=True), backend)


# Shapes around the GPU kernel's edges (reduce_rows.wgsl: 256-thread workgroups, a thread
# folds up to 16 elements before more threads or workgroups join, a second dispatch folds
# the partials of few long reductions): (shape, axes).
ROW_EDGES = {
    "short-rows-many": ((3000, 5), [1]),
    "row-eq-group": ((7, 256), [1]),
    "row-gt-group-npow2": ((5, 4099), [-1]),
    "row-16x-group": ((3, 4096), [1]),
    "one-long-row": ((1, 200003), [1]),
    "global-pool": ((1, 128, 128, 16), [1, 2]),
    "global-pool-odd-channels": ((2, 33, 31, 5), [1, 2]),
    "global-pool-wide-channels": ((1, 9, 9, 300), [1, 2]),
    "middle-axis": ((4, 1000, 3), [1]),
    "outer-and-inner": ((6, 5, 70, 9), [0, 3]),
    "all": ((37, 41, 3), [0, 1, 2]),
}


@pytest.mark.parametrize("keep", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("case", ROW_EDGES)
@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_float_row_edges(op, case, keep, backend):
    shape, axes = ROW_EDGES[case]
    x = np.random.default_rng(list(ROW_EDGES).index(case)).standard_normal(shape).astype(np.float32)
    check_op(*single_op(op, [In(x), C(_axes(axes))], keep_dims=keep), backend)


@pytest.mark.parametrize("case", ["row-gt-group-npow2", "one-long-row", "global-pool", "outer-and-inner"])
@pytest.mark.parametrize("op", ["SUM", "REDUCE_MAX", "MEAN"])
def test_reduce_int32_row_edges(op, case, backend):
    shape, axes = ROW_EDGES[case]
    x = np.random.default_rng(3).integers(-1000, 1000, shape).astype(np.int32)
    check_op(*single_op(op, [In(x), C(_axes(axes))], keep_dims=False), backend)


@pytest.mark.parametrize("case", ["row-gt-group-npow2", "global-pool-odd-channels"])
def test_reduce_prod_row_edges(case, backend):
    """Products of values near 1 (so they stay finite), over long rows and global pools."""
    shape, axes = ROW_EDGES[case]
    x = (1 + 0.01 * np.random.default_rng(5).standard_normal(shape)).astype(np.float32)
    check_op(*single_op("REDUCE_PROD", [In(x), C(_axes(axes))], keep_dims=True), backend, rtol=1e-4)


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN", "SUM"])
def test_reduce_infinities(op, backend):
    """Rows of -inf / +inf (all or some) and mixed signs: the results LiteRT gives."""
    x = np.random.default_rng(9).standard_normal((6, 700)).astype(np.float32)
    x[0] = -np.inf
    x[1] = np.inf
    x[2, 500] = np.inf
    x[3, 3] = -np.inf
    x[4, ::2] = np.inf
    x[4, 1::2] = -np.inf  # SUM: nan
    check_op(*single_op(op, [In(x), C(_axes([1]))], keep_dims=False), backend)


@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_int(op, dtype, backend):
    # MEAN of ints truncates toward zero; negative sums check the direction.
    x = RNG.integers(-50, 50, (3, 4, 5)).astype(dtype)
    check_op(*single_op(op, [In(x), C(_axes([1, -1]))], keep_dims=False), backend)


INT8_MEANS = {  # axes, keep_dims, input quant, output quant
    "spatial-keep-same-q": ([1, 2], True, (0.1, 3), (0.1, 3)),
    "spatial-keep": ([1, 2], True, (0.1, 3), (0.07, -5)),
    "spatial-drop": ([1, 2], False, (0.05, -10), (0.02, 4)),
    "channels": ([3], False, (0.1, 3), (0.07, -5)),
    "batch-and-width": ([0, 2], True, (0.2, 0), (0.05, 20)),
    "saturating": ([3], False, (1.0, 0), (0.01, 0)),
}


@pytest.mark.parametrize("case", INT8_MEANS)
def test_mean_int8(case, backend):
    axes, keep, qi, qo = INT8_MEANS[case]
    # Own seed per case (not the module RNG): the data must not depend on which tests ran
    # first. Real-valued ties are avoided by luck here; test_mean_int8_real_ties covers them.
    x = np.random.default_rng(list(INT8_MEANS).index(case)).integers(-128, 128, (2, 5, 7, 3)).astype(np.int8)
    check_op(*single_op("MEAN", [In(x, qi), C(_axes(axes))], keep_dims=keep, out_quant=qo), backend)


def test_mean_int8_real_ties():
    """Seed 13 holds a real tie (0.05/0.02 over 35 pixels, exactly k + 0.5): LiteRT's XNNPACK
    folds the zero points into float32 constants and rounds the float32 result, which lands
    +-1 off a rounding of the exact mean (the kernel once did that; this case failed then)."""
    axes, keep, qi, qo = INT8_MEANS["spatial-drop"]
    x = np.random.default_rng(13).integers(-128, 128, (2, 5, 7, 3)).astype(np.int8)
    check_op(*single_op("MEAN", [In(x, qi), C(_axes(axes))], keep_dims=keep, out_quant=qo), "cpu")


def test_mean_int8_ties_round_to_even(backend):
    # Pairs whose mean is exactly k + 0.5: LiteRT rounds them to even.
    x = np.array([[0, 1], [1, 2], [0, -1], [-1, -2], [2, 3], [-2, -3]], np.int8).reshape(1, 6, 2, 1)
    check_op(*single_op("MEAN", [In(x, (0.5, 0)), C(_axes([2]))], keep_dims=True, out_quant=(0.5, 0)), backend)


UINT8_MEANS = {  # input shape, axes, keep_dims, input quant, output quant
    "spatial-keep": ((1, 5, 7, 3), [1, 2], True, (0.1, 131), (0.07, 120)),
    "spatial-drop-ties": ((2, 5, 7, 3), [1, 2], False, (0.05, 118), (0.02, 132)),
    "channels": ((2, 5, 7, 3), [3], False, (0.05, 128), (0.02, 0)),
    "batch-and-width-same-q": ((2, 5, 7, 3), [0, 2], True, (0.5, 128), (0.5, 128)),
    "zero-points-255-0": ((1, 4, 4, 64), [1, 2], True, (0.5, 255), (0.25, 0)),
    "large-window": ((1, 33, 33, 2), [1, 2], True, (0.02, 3), (0.05, 250)),
    "all-axes": ((2, 6), [0, 1], False, (0.3, 100), (0.3, 100)),
}


@pytest.mark.parametrize("case", UINT8_MEANS)
def test_mean_uint8(case, backend):
    """uint8 MEAN as LiteRT's XNNPACK (refused before issue 23): the ties, zero points at both
    ends and windows past 1,000 elements; a rounding of the exact mean misses several."""
    shape, axes, keep, qi, qo = UINT8_MEANS[case]
    x = np.random.default_rng(list(UINT8_MEANS).index(case)).integers(0, 256, shape).astype(np.uint8)
    check_op(*single_op("MEAN", [In(x, qi), C(_axes(axes))], keep_dims=keep, out_quant=qo), backend)


def test_mean_uint8_ties_round_to_even(backend):
    """Pairs whose mean is exactly k + 0.5 around the zero point 128: LiteRT rounds them to even."""
    x = (np.array([[0, 1], [1, 2], [0, -1], [-1, -2], [2, 3], [-2, -3]]) + 128).astype(np.uint8).reshape(1, 6, 2, 1)
    check_op(*single_op("MEAN", [In(x, (0.5, 128)), C(_axes([2]))], keep_dims=True, out_quant=(0.5, 128)),
             backend)


def test_mean_unquantized_uint8_rejected_at_allocate():
    x = RNG.integers(0, 256, (1, 4, 4, 2)).astype(np.uint8)
    model, _ = single_op("MEAN", [In(x), C(_axes([1, 2]))], keep_dims=True)
    with pytest.raises(UnsupportedOpError, match="uint8"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_reduce_max_min_quantized_codes(op, dtype, backend):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, (2, 6, 5)).astype(dtype)
    check_op(*single_op(op, [In(x, (0.3, 7)), C(_axes([-1]))], keep_dims=True), backend)


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize(("dtype", "q_out"), [(np.int8, (0.6, -7)), (np.uint8, (0.031, 120))], ids=["int8", "uint8"])
@pytest.mark.parametrize(("axes", "keep"), [([1], False), ([0, 2], True), ([-1], True)], ids=["mid", "two", "last"])
def test_reduce_max_min_across_quantizations_keep_codes(op, dtype, q_out, axes, keep, backend):
    """An 8-bit output of another scale / zero point: LiteRT's builtin kernel refuses it, its default
    (XNNPACK) returns the extreme code unchanged, scales ignored; so does gpulite."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, (4, 64, 3)).astype(dtype)
    shape = np.max(x, axis=tuple(axes), keepdims=keep).shape
    model, feeds = single_op(op, [In(x, (0.05, 3 if dtype == np.int8 else 130)), C(_axes(axes))], out_quant=q_out,
                             out_shape=shape, keep_dims=keep)
    with pytest.raises(RuntimeError, match="scale"):
        run_litert_reference(model, feeds)
    check_op(model, feeds, backend)


def test_reduce_runtime_axes_rejected_at_allocate():
    model, _ = single_op("MEAN", [In(np.zeros((2, 3), np.float32)), In(_axes([1]))], out_shape=(2,))
    with pytest.raises(UnsupportedOpError, match="run time"):
        Interpreter(model_content=model).allocate_tensors()


def test_reduce_follows_resized_input(backend):
    """MEAN keep_dims then SUM drop, after the batch and spatial size change."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 3), np.float32)
    m = mb.tensor("m", (1, 1, 1, 3), np.float32)
    mb.op("MEAN", [x, mb.const("a", _axes([1, 2]))], [m], keep_dims=True)
    s = mb.tensor("s", (1, 1), np.float32)
    mb.op("SUM", [m, mb.const("b", _axes([-1, 1]))], [s], keep_dims=False)
    mb.output(s)
    check_op(mb.build(), [RNG.standard_normal((3, 6, 5, 3)).astype(np.float32)], backend)


EIGHT_BIT_SUMS = {  # dtype, axes, keep_dims, input quant, output quant (uint8 zero points shifted by 128)
    "int8-spatial-keep": (np.int8, [1, 2], True, (0.02, -3), (0.15, 20)),
    "int8-batch-same-q": (np.int8, [0], False, (0.05, 3), (0.05, 3)),
    "int8-ties-half": (np.int8, [0], True, (0.25, 1), (0.5, 0)),  # odd sums land on k + 0.5: half to even
    "int8-batch-and-width": (np.int8, [0, 2], False, (0.1, 0), (1.7, 0)),
    "uint8-spatial-keep": (np.uint8, [1, 2], True, (0.05, 128), (0.5, 128)),
    "uint8-channels": (np.uint8, [3], True, (0.25, 129), (1.5, 128)),
}


@pytest.mark.parametrize("case", EIGHT_BIT_SUMS)
def test_sum_8bit(case, backend):
    dt, axes, keep, qi, qo = EIGHT_BIT_SUMS[case]
    info = np.iinfo(dt)
    x = np.random.default_rng(list(EIGHT_BIT_SUMS).index(case)).integers(info.min, info.max + 1, (2, 5, 7, 16))
    check_op(*single_op("SUM", [In(x.astype(dt), qi), C(_axes(axes))], keep_dims=keep, out_quant=qo), backend)


def test_sum_8bit_ratio_tenth_ties():
    """Exact results of k + 0.5 with s_in / s_out = 0.1: LiteRT's float32 constants (the zero
    points folded in) decide them; rounding the exact sum missed a few by one code."""
    x = np.random.default_rng(0).integers(-128, 128, (1, 4, 4, 64)).astype(np.int8)
    check_op(*single_op("SUM", [In(x, (0.05, 3)), C(_axes([1, 2]))], keep_dims=True, out_quant=(0.5, -5)), "cpu")


INT16_MEANS = {  # input shape, axes, keep_dims, input scale, output scale (zero points 0: the 16x8 mode)
    "spatial-keep": ((1, 6, 6, 32), [1, 2], True, 0.002, 0.0003),
    "spatial-drop": ((2, 5, 7, 8), [1, 2], False, 0.001, 0.0005),
    "rows": ((3, 50), [1], True, 0.0004, 0.0004),
    "last-axis": ((2, 4, 6), [2], False, 0.0007, 0.001),
}


@pytest.mark.parametrize("case", INT16_MEANS)
def test_mean_int16(case, backend):
    """int16 MEAN: TFLite's integer Mean (the count folded into the multiplier); the naive
    float or divide-after-rescale forms each miss a few of these outputs by one."""
    shape, axes, keep, si, so = INT16_MEANS[case]
    x = np.random.default_rng(list(INT16_MEANS).index(case)).integers(-20000, 20000, shape).astype(np.int16)
    check_op(*single_op("MEAN", [In(x, (si, 0)), C(_axes(axes))], keep_dims=keep, out_quant=(so, 0)), backend)


# Integer reductions over ROW_EDGES' shapes on the GPU (quantized="exact"): long rows that need
# a second dispatch, outputs that are no multiple of 4 (packed codes), one i32 sum per output
# (op, dtype, input quant, output quant).
QUANT_ROW_OPS = {
    "mean-int8": ("MEAN", np.int8, (0.05, -3), (0.07, 5)),
    "mean-uint8": ("MEAN", np.uint8, (0.05, 140), (0.03, 100)),
    "sum-int8": ("SUM", np.int8, (0.02, 3), (0.9, -7)),
    "sum-uint8": ("SUM", np.uint8, (0.02, 130), (2.5, 120)),
    "sum-int16": ("SUM", np.int16, (0.001, 0), (0.07, 0)),
    "mean-int16": ("MEAN", np.int16, (0.001, 0), (0.0007, 0)),
    "max-uint8": ("REDUCE_MAX", np.uint8, (0.1, 128), (0.1, 128)),
    "min-int16": ("REDUCE_MIN", np.int16, (0.001, 0), (0.001, 0)),
}


@pytest.mark.parametrize("case", ["short-rows-many", "row-gt-group-npow2", "global-pool", "global-pool-odd-channels",
                                  "outer-and-inner"])
@pytest.mark.parametrize("kind", QUANT_ROW_OPS)
def test_reduce_quantized_row_edges(kind, case, backend):
    op, dt, qi, qo = QUANT_ROW_OPS[kind]
    shape, axes = ROW_EDGES[case]
    info = np.iinfo(dt)
    x = np.random.default_rng(list(ROW_EDGES).index(case)).integers(info.min, info.max + 1, shape).astype(dt)
    if op == "SUM" and dt != np.int16:
        qo = (qo[0] * np.prod([shape[a] for a in axes]) / 64, qo[1])  # keep the sums inside the output's range
    check_op(*single_op(op, [In(x, qi), C(_axes(axes))], keep_dims=True, out_quant=qo), backend)
