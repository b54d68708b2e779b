"""int8/uint8 ops against LiteRT, bit for bit (int_tol=0 throughout).

LiteRT's default interpreter runs quantized ADD/SUB/MUL, 8-bit requantize and
DEQUANTIZE in its XNNPACK delegate when the scale ratios are in the delegate's range and in
TFLite's builtin kernels otherwise; each configuration below is chosen to land on one of
those paths (named in its id). Binary ops are checked on every (a, b) pair of 8-bit values.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends.cpu.kernels import quantized_binary as qb
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.ops.harness import check_op, run_litert

I8, U8 = np.int8, np.uint8


def model(op: str, ins: list[tuple], out: tuple, **options) -> bytes:
    """ins/out: (shape, dtype, quant) or, for a constant input, ("const", array, quant)."""
    mb = ModelBuilder()
    idx = []
    for i, (a, b, q) in enumerate(ins):
        idx.append(mb.const(f"c{i}", b, quant=q) if a == "const" else mb.input(f"x{i}", a, b, quant=q))
    y = mb.tensor("y", out[0], out[1], quant=out[2])
    mb.op(op, idx, [y], **options)
    mb.output(y)
    return mb.build()


def all_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) pair of 8-bit values as two (1, 256, 256) arrays."""
    info = np.iinfo(dtype)
    v = np.arange(info.min, info.max + 1).astype(dtype)
    return np.repeat(v, 256).reshape(1, 256, 256), np.tile(v, 256).reshape(1, 256, 256)


def all_values(dtype, repeat: int = 1) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.tile(np.arange(info.min, info.max + 1), repeat).astype(dtype).reshape(repeat, -1)


# (s1, z1, s2, z2, s_out, z_out) with int8 zero points; uint8 cases shift them by 128.
BINARY_PARAMS = {
    "xnn-typical": (0.02, -3, 0.035, 5, 0.05, -10),
    "xnn-ties": (0.5, 0, 0.5, 0, 1.0, 0),  # (a + b) / 2 and a * b / 4 land on halves
    "xnn-wide": (0.013, 17, 0.9, -40, 0.3, 7),
    "builtin-ratio-400": (100.0, 0, 100.0, 1, 0.25, 0),  # input/output ratio >= 256
    "builtin-tiny-b": (0.5, 3, 1e-4, -2, 0.5, -1),  # ADD ratio < 1/1024
    "builtin-small-product": (0.01, 2, 0.01, -5, 10.0, 3),  # MUL s1*s2/so < 2**-16
}


def _shift(p: tuple, dtype) -> tuple:
    if dtype == I8:
        return p
    s1, z1, s2, z2, so, zo = p
    return s1, z1 + 128, s2, z2 + 128, so, zo + 128


@pytest.mark.parametrize("params", list(BINARY_PARAMS))
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary_all_pairs(op: str, dtype, params: str, backend: str) -> None:
    s1, z1, s2, z2, so, zo = _shift(BINARY_PARAMS[params], dtype)
    if op == "MUL" and params == "xnn-ties":
        so = 0.25
    a, b = all_pairs(dtype)
    m = model(op, [(a.shape, dtype, (s1, z1)), (b.shape, dtype, (s2, z2))], (a.shape, dtype, (so, zo)))
    check_op(m, [a, b], backend)


# Output scales: plain, and 4.0 where RELU6's bound 6 / 4 = 1.5 is a tie (XNNPACK rounds it to
# even, TFLite away from zero).
@pytest.mark.parametrize("out_scale", [0.05, 4.0])
@pytest.mark.parametrize("act", ["RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary_fused_activation(op: str, dtype, act: str, out_scale: float, backend: str) -> None:
    s1, z1, s2, z2, so, zo = _shift((0.04, -3, 0.03, 5, out_scale, -1), dtype)
    a, b = all_pairs(dtype)
    m = model(op, [(a.shape, dtype, (s1, z1)), (b.shape, dtype, (s2, z2))], (a.shape, dtype, (so, zo)),
              fused_activation_function=act)
    check_op(m, [a, b], backend)


BROADCASTS = {"channel": ((1, 4, 4, 8), (8,)), "both": ((2, 1, 4), (1, 3, 1)), "rank": ((5, 1), (2, 1, 6))}


@pytest.mark.parametrize("shapes", list(BROADCASTS))
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary_broadcast(op: str, shapes: str, backend: str) -> None:
    rng = np.random.default_rng(21)
    sa, sb = BROADCASTS[shapes]
    a, b = (rng.integers(-128, 128, s).astype(I8) for s in (sa, sb))
    out = np.broadcast_shapes(sa, sb)
    m = model(op, [(sa, I8, (0.02, -3)), (sb, I8, (0.035, 5))], (out, I8, (0.05, -10)))
    check_op(m, [a, b], backend)


@pytest.mark.parametrize("single", [True, False], ids=["single", "row"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_binary_const_operand(op: str, single: bool, backend: str) -> None:
    a = all_values(U8, 3)
    c = np.array([200], U8) if single else np.random.default_rng(2).integers(0, 256, (256,)).astype(U8)
    m = model(op, [(a.shape, U8, (0.02, 125)), ("const", c, (0.035, 133))], (a.shape, U8, (0.05, 118)))
    check_op(m, [a], backend)


# Scales outside XNNPACK's range, so TFLite's builtin kernels run; with these the NEON loop
# (narrowing through int16) and the scalar loop disagree on many inputs.
BUILTIN_PARAMS = {"ADD": (100.0, 0, 0.035, 5, 0.25, -1), "MUL": (0.5, 3, 300.0, -2, 0.5, 1)}


def _neon_and_scalar(op: str, a: np.ndarray, b: np.ndarray, params: tuple, dtype) -> tuple[np.ndarray, np.ndarray]:
    out = np.broadcast_shapes(a.shape, b.shape)
    fa, fb = (np.broadcast_to(v, out).astype(np.int64) for v in (a, b))
    info = np.iinfo(dtype)
    if op == "ADD":
        neon, scalar = qb.tflite_add_neon(fa, fb, *params, dtype), qb.tflite_add_scalar(fa, fb, *params, sub=False)
    else:
        neon, scalar = qb.tflite_mul_neon(fa, fb, *params), qb.tflite_mul(fa, fb, *params)
    return np.clip(neon, info.min, info.max), np.clip(scalar, info.min, info.max)


@pytest.mark.parametrize("n", [1000, 1001, 7])
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_builtin_tail(op: str, dtype, n: int, backend: str) -> None:
    # TFLite's builtin loop runs NEON over blocks and scalar code over the last size % block.
    params = _shift(BUILTIN_PARAMS[op], dtype)
    s1, z1, s2, z2, so, zo = params
    assert not qb.xnn_accepts(op, s1, s2, so)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(n)
    a, b = (rng.integers(info.min, info.max + 1, (1, n)).astype(dtype) for _ in range(2))
    # One input mostly at its zero point, so that not every output saturates.
    (a if op == "ADD" else b)[0, np.arange(n) % 3 == 1] = z1 if op == "ADD" else z2
    neon, scalar = _neon_and_scalar(op, a, b, params, dtype)
    assert (neon != scalar).mean() > 0.02  # else this case could not tell the two loops apart
    m = model(op, [(a.shape, dtype, (s1, z1)), (b.shape, dtype, (s2, z2))], (a.shape, dtype, (so, zo)))
    check_op(m, [a, b], backend)


# Broadcasts the builtin kernels split into NEON and scalar runs differently: elementwise runs,
# runs against one value, and broadcasts on both sides (all scalar).
BUILTIN_BROADCASTS = [
    ((1, 1001), (1,)), ((1, 7), (1,)), ((1, 4, 4, 40), (40,)), ((1, 4, 4, 40), (1, 4, 1, 1)),
    ((1, 4, 4, 40), (1, 4, 4, 1)), ((1, 4, 4, 40), (1, 1, 4, 40)), ((3, 50), (3, 1)), ((3, 50), (1, 50)),
    ((2, 1, 40), (1, 3, 1)), ((1, 4, 4, 8), (8,)),
]


@pytest.mark.parametrize("swap", [False, True], ids=["full-first", "full-second"])
@pytest.mark.parametrize("shapes", BUILTIN_BROADCASTS, ids=lambda s: f"{s[0]}+{s[1]}".replace(" ", ""))
@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_builtin_broadcast(op: str, shapes, swap: bool, backend: str) -> None:
    sa, sb = shapes
    params = BUILTIN_PARAMS[op]
    s1, z1, s2, z2, so, zo = params
    out = np.broadcast_shapes(sa, sb)
    rng = np.random.default_rng(len(sa) * 100 + sa[-1])
    a, b = rng.integers(-128, 128, sa).astype(I8), rng.integers(-128, 128, sb).astype(I8)
    target = a if op == "ADD" else b
    target.reshape(-1)[np.arange(target.size) % 3 != 0] = z1 if op == "ADD" else z2
    neon, scalar = _neon_and_scalar(op, a, b, params, I8)
    assert (neon != scalar).any()  # else this case could not tell the two loops apart
    ins, vals = [(sa, I8, (s1, z1)), (sb, I8, (s2, z2))], [a, b]
    if swap:
        ins, vals = ins[::-1], vals[::-1]
    check_op(model(op, ins, (out, I8, (so, zo))), vals, backend)


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_maximum_minimum_raw(dtype, backend: str) -> None:
    a, b = all_pairs(dtype)
    q = (0.1, 3)
    for op in ("MAXIMUM", "MINIMUM"):
        check_op(model(op, [(a.shape, dtype, q), (b.shape, dtype, q)], (a.shape, dtype, q)), [a, b], backend)


# ---- table ops: LOGISTIC, TANH, RELU family, HARD_SWISH -------------------------------------------------
LUT_CASES = {
    "logistic-int8": ("LOGISTIC", I8, (0.07, 3), (1 / 256, -128)),
    "logistic-int8-fine": ("LOGISTIC", I8, (0.01, -20), (1 / 256, -128)),
    "logistic-uint8": ("LOGISTIC", U8, (0.07, 130), (1 / 256, 0)),
    "tanh-int8": ("TANH", I8, (0.03, 3), (1 / 128, 0)),
    "tanh-uint8": ("TANH", U8, (0.03, 130), (1 / 128, 128)),
    "relu-int8": ("RELU", I8, (0.07, 3), (0.05, -100)),
    "relu-int8-same": ("RELU", I8, (0.05, -7), (0.05, -7)),
    "relu6-int8": ("RELU6", I8, (0.07, 3), (0.03, -128)),
    "relu6-uint8-tie": ("RELU6", U8, (0.07, 3), (4.0, 0)),
    "relu_n1_to_1-uint8": ("RELU_N1_TO_1", U8, (0.01, 100), (0.01, 120)),
    # s_in / s_out is 1.25 divided in float32 (1.2500000512 in double): negative ties
    "relu_n1_to_1-int8-float-ratio": ("RELU_N1_TO_1", I8, (0.05, 3), (0.04, -5)),
    "relu_n1_to_1-int8-float-ratio-2": ("RELU_N1_TO_1", I8, (0.05, 0), (0.02, 0)),
    # HARD_SWISH: the relu-ish multiplier shifts left (input scale >= ~0.0117) or right
    "hard_swish-int8": ("HARD_SWISH", I8, (0.05, 3), (0.04, -5)),
    "hard_swish-int8-fine-input": ("HARD_SWISH", I8, (0.005, -10), (0.004, -60)),
    "hard_swish-int8-wide-output": ("HARD_SWISH", I8, (0.2, 5), (0.01, 0)),
    "hard_swish-uint8": ("HARD_SWISH", U8, (0.1, 108), (0.05, 28)),
}


@pytest.mark.parametrize("case", list(LUT_CASES))
def test_table_ops_all_values(case: str, backend: str) -> None:
    op, dt, qi, qo = LUT_CASES[case]
    x = all_values(dt, 2)
    check_op(model(op, [(x.shape, dt, qi)], (x.shape, dt, qo)), [x], backend)


# ---- SOFTMAX -----------------------------------------------------------------------------------
@pytest.mark.parametrize("beta", [1.0, 0.3, 2.0])
@pytest.mark.parametrize("in_scale", [0.05, 0.2, 1.0])
@pytest.mark.parametrize("shape", [(1, 10), (4, 1), (2, 3, 300)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_softmax(dtype, shape, in_scale: float, beta: float, backend: str) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(17).integers(info.min, info.max + 1, shape).astype(dtype)
    zp_in, zp_out = (3, -128) if dtype == I8 else (131, 0)
    m = model("SOFTMAX", [(shape, dtype, (in_scale, zp_in))], (shape, dtype, (1 / 256, zp_out)), beta=beta)
    check_op(m, [x], backend)


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_softmax_classifier_row(dtype, backend: str) -> None:
    """A classifier's 1001 classes: an odd row (packed codes end mid-word) near the longest
    row one GPU thread sums in order (1024)."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(18).integers(info.min, info.max + 1, (2, 1001)).astype(dtype)
    zp_in, zp_out = (-5, -128) if dtype == I8 else (120, 0)
    m = model("SOFTMAX", [(x.shape, dtype, (0.15, zp_in))], (x.shape, dtype, (1 / 256, zp_out)), beta=1.0)
    check_op(m, [x], backend)


@pytest.mark.parametrize("in_scale", [0.02, 0.3, 2.0], ids=["fine", "coarse", "sums-near-1"])
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_log_softmax_many_rows(dtype, in_scale: float, backend: str) -> None:
    """Thousands of rows, so thousands of sums whose logarithm (the GPU's in fixed point, the
    CPU's in float64) decides a rounding somewhere; with scale 2.0 most exponentials underflow
    and the sums sit just above 1, where the logarithm is tiny."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(19).integers(info.min, info.max + 1, (3000, 7)).astype(dtype)
    out_q = (16 / 256, 127 if dtype == I8 else 255)
    check_op(model("LOG_SOFTMAX", [(x.shape, dtype, (in_scale, 3 if dtype == I8 else 128))], (x.shape, dtype, out_q)),
             [x], backend)


# Rows (int8, scale 0.1) on which summing the exponentials in any order other than LiteRT's
# left-to-right float32 loop (reversed, numpy's pairwise sum, float64) changes an output.
SUM_ORDER_ROWS = [
    [105, 96, 74, 107, 91, 87, 110, 99, 118, 95, 119, 126, 90, 75, 107, 112],
    [109, 76, 95, 73, 108, 96, 73, 93, 104, 110, 79, 68, 77, 122, 75, 87],
    [91, 122, 120, 102, 103, 99, 72, 87, 94, 121, 83, 74, 94, 78, 87, 73],
    [109, 112, 74, 108, 97, 101, 114, 74, 88, 127, 103, 102, 90, 119, 73, 86],
    [114, 99, 89, 124, 117, 109, 89, 116, 95, 127, 107, 112, 67, 112, 119, 94],
    [116, 122, 125, 99, 103, 102, 92, 84, 84, 76, 124, 116, 80, 77, 118, 125],
    [74, 84, 94, 98, 71, 105, 71, 83, 77, 109, 125, 103, 71, 68, 71, 120],
    [86, 94, 120, 112, 121, 87, 74, 70, 71, 117, 95, 110, 98, 68, 91, 97],
    [112, 99, 104, 77, 80, 91, 113, 118, 100, 73, 93, 107, 82, 107, 91, 99],
]


def test_softmax_sum_order(backend: str) -> None:
    x = np.array(SUM_ORDER_ROWS, I8)
    m = model("SOFTMAX", [(x.shape, I8, (0.1, 0))], (x.shape, I8, (1 / 256, -128)), beta=1.0)
    check_op(m, [x], backend)


# ---- QUANTIZE ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.25, 0.05, 0.0137])
@pytest.mark.parametrize("dtype,zp", [(I8, 3), (U8, 128), (np.int16, 0)], ids=["int8", "uint8", "int16"])
def test_quantize_float(dtype, zp: int, scale: float, backend: str) -> None:
    # Exact halves (k + 0.5) * scale show the rounding rule; the rest covers clamping and sizes
    # that are not a multiple of any SIMD width.
    k = np.arange(-300, 301)
    ties = ((k + 0.5) * scale).astype(np.float32)
    rng = np.random.default_rng(1)
    other = rng.uniform(-200 * scale, 200 * scale, 200).astype(np.float32)
    extremes = np.array([0.0, -0.0, 1e6, -1e6, 1e-30, scale * 0.49999997], np.float32)
    x = np.concatenate([ties, other, extremes]).reshape(1, -1)
    check_op(model("QUANTIZE", [(x.shape, np.float32, None)], (x.shape, dtype, (scale, zp))), [x], backend)


REQUANTIZE = {
    "int8-int8-xnn": (I8, (0.015, 3), I8, (0.05, -2)),
    "int8-int8-xnn-up": (I8, (0.09, 3), I8, (0.05, -2)),
    "uint8-uint8-xnn": (U8, (0.015, 131), U8, (0.05, 120)),
    "int8-int8-builtin-small": (I8, (0.05 / 257, 3), I8, (0.05, -2)),
    "uint8-uint8-builtin-small": (U8, (0.05 / 300, 130), U8, (0.05, 120)),
    "int8-uint8": (I8, (0.015, 3), U8, (0.05, 120)),
    "uint8-int8": (U8, (0.015, 130), I8, (0.05, -2)),
    "int8-uint8-shift": (I8, (0.05, 3), U8, (0.05, 131)),
    "int16-int8": (np.int16, (0.00013, 0), I8, (0.05, -2)),
    "int16-int16": (np.int16, (0.0013, 0), np.int16, (0.0007, 0)),
    # reference_ops::Requantize (no optimized form): 8-bit -> int16, int16 -> int32, int32 -> 8/16-bit
    "int8-int16": (I8, (0.015, 3), np.int16, (0.0001, -7)),
    "uint8-int16": (U8, (0.015, 131), np.int16, (0.0003, 100)),
    "int16-int32": (np.int16, (0.0013, 0), np.int32, (0.0000007, 5)),
    "int32-int8": (np.int32, (1e-5, 7), I8, (170.0, -3)),
    "int32-int16": (np.int32, (1e-5, 0), np.int16, (0.65536, 0)),
}


@pytest.mark.parametrize("n", [1024, 1001])
@pytest.mark.parametrize("case", list(REQUANTIZE))
def test_requantize(case: str, n: int, backend: str) -> None:
    src, qi, dst, qo = REQUANTIZE[case]
    info = np.iinfo(src)
    rng = np.random.default_rng(n)
    if info.bits == 8:  # every value, in an order that puts all of them in the scalar tail too
        x = np.concatenate([np.arange(info.min, info.max + 1), rng.integers(info.min, info.max + 1, n)])
        x = np.concatenate([x[:n - 256 - 16], np.arange(info.min, info.max + 1)[::-1], x[-16:]])[:n]
    else:
        x = rng.integers(info.min, info.max + 1, n)
    x = x.astype(src).reshape(1, n)
    check_op(model("QUANTIZE", [(x.shape, src, qi)], (x.shape, dst, qo)), [x], backend)


def test_requantize_int16_needs_zero_points_zero() -> None:
    from tests.ops.harness import run_litert

    x = np.zeros((1, 8), np.int16)
    m = model("QUANTIZE", [(x.shape, np.int16, (0.001, 3))], (x.shape, np.int16, (0.002, 0)))
    with pytest.raises(RuntimeError):
        run_litert(m, [x])
    with pytest.raises(UnsupportedOpError, match="zero points 0"):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


# ---- DEQUANTIZE -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,q", [(I8, (0.05, 3)), (U8, (0.0371, 130)), (np.int16, (0.0013, 0))],
                         ids=["int8", "uint8", "int16"])
def test_dequantize(dtype, q, backend: str) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(4).integers(info.min, info.max + 1, (3, 333)).astype(dtype)
    x.reshape(-1)[:2] = [info.min, info.max]
    check_op(model("DEQUANTIZE", [(x.shape, dtype, q)], (x.shape, np.float32, None)), [x], backend)


@pytest.mark.parametrize("axis", [0, 3])
def test_dequantize_per_channel(axis: int, backend: str) -> None:
    shape = (4, 3, 5, 6)
    n = shape[axis]
    q = Quant(scale=np.linspace(0.01, 0.2, n), zero_point=np.arange(n) - 2, axis=axis)
    x = np.random.default_rng(6).integers(-128, 128, shape).astype(I8)
    check_op(model("DEQUANTIZE", [(shape, I8, q)], (shape, np.float32, None)), [x], backend)


def test_dequantize_float16(backend: str) -> None:
    x = np.random.default_rng(3).normal(0, 100, (2, 50)).astype(np.float16)
    x.reshape(-1)[:3] = [np.inf, -np.inf, 65504]
    check_op(model("DEQUANTIZE", [(x.shape, np.float16, None)], (x.shape, np.float32, None)), [x], backend)


# ---- rejected at allocate_tensors ---------------------------------------------------------------
def _allocate(m: bytes) -> None:
    Interpreter(model_content=m, backend="cpu").allocate_tensors()


def test_quantized_tanh_activation_is_rejected() -> None:
    s = ((4,), I8, (0.1, 0))
    with pytest.raises(UnsupportedOpError, match="fused activation TANH"):
        _allocate(model("ADD", [s, s], s, fused_activation_function="TANH"))


def test_logistic_output_scale_is_checked() -> None:
    with pytest.raises(UnsupportedOpError, match=r"scale 0\.00390625"):
        _allocate(model("LOGISTIC", [((4,), I8, (0.1, 0))], ((4,), I8, (0.01, -128))))


def test_per_channel_quantize_output_is_rejected() -> None:
    q = Quant(scale=[0.1, 0.2], zero_point=[0, 0], axis=1)
    with pytest.raises(UnsupportedOpError, match="per-tensor"):
        _allocate(model("QUANTIZE", [((3, 2), np.float32, None)], ((3, 2), I8, q)))


# ---- LEAKY_RELU, PRELU ---------------------------------------------------------------------------
# (s_in, zp_in, s_out, zp_out, alpha) for int8 (uint8 shifts zero points by 128): inside XNNPACK's
# ranges (8-bit multipliers) and outside them (TFLite's fixed-point kernel runs).
LEAKY_CASES = {
    "xnn": (0.05, 3, 0.04, -5, 0.2),
    "xnn-small-alpha": (0.1, -20, 0.05, -100, 0.01),
    "xnn-shrink": (0.02, 0, 0.3, 10, 0.3),
    "xnn-negative-alpha": (0.05, 3, 0.04, -5, -0.5),
    "xnn-alpha-above-1": (0.05, 3, 0.04, -5, 1.5),
    "builtin-ratio-500": (1.0, 0, 0.002, 0, 0.1),
    "builtin-ratio-0.001": (0.001, 0, 1.0, 0, 0.2),
}


@pytest.mark.parametrize("case", list(LEAKY_CASES))
@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_leaky_relu_all_values(dtype, case: str, backend: str) -> None:
    s_in, z_in, s_out, z_out, alpha = LEAKY_CASES[case]
    si, zi, _, _, so, zo = _shift((s_in, z_in, 1.0, 0, s_out, z_out), dtype)
    x = all_values(dtype, 3)
    check_op(model("LEAKY_RELU", [(x.shape, dtype, (si, zi))], (x.shape, dtype, (so, zo)), alpha=alpha), [x], backend)


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
def test_prelu_all_pairs(dtype, backend: str) -> None:
    """Every (input, alpha) pair of codes, alpha a graph input (TFLite's int8 PRELU kernel)."""
    s1, z1, s2, z2, so, zo = _shift((0.05, 3, 0.004, -7, 0.04, -5), dtype)
    a, b = all_pairs(dtype)
    check_op(model("PRELU", [(a.shape, dtype, (s1, z1)), (b.shape, dtype, (s2, z2))], (a.shape, dtype, (so, zo))),
             [a, b], backend)


def test_prelu_per_channel_const_alpha(backend: str) -> None:
    """The converter's form: a constant alpha per channel, broadcast over (1, H, W, C)."""
    rng = np.random.default_rng(8)
    x = rng.integers(-128, 128, (1, 5, 6, 8)).astype(I8)
    alpha = rng.integers(-128, 128, (1, 1, 8)).astype(I8)
    m = model("PRELU", [(x.shape, I8, (0.06, -4)), ("const", alpha, (0.003, 10))], (x.shape, I8, (0.05, 7)))
    check_op(m, [x], backend)


# ---- 8-bit tables over a float function: EXP, LOG, SQRT, ELU, GELU ------------------------------
FLOAT_TABLE_CASES = {
    "exp": ("EXP", {}, I8, (0.05, 3), (0.5, -100)),
    "log": ("LOG", {}, I8, (0.05, -128), (0.04, -5)),
    "log-negative-inputs": ("LOG", {}, I8, (0.05, 3), (0.04, -5)),  # log(x <= 0): the least output, not NaN
    "sqrt": ("SQRT", {}, I8, (0.05, -128), (0.04, -5)),  # LiteRT truncates here
    "elu": ("ELU", {}, I8, (0.05, 3), (0.04, -5)),  # XNNPACK: half to even after the zero point
    "gelu": ("GELU", {"approximate": False}, I8, (0.05, 3), (0.04, -5)),
    "gelu-approximate": ("GELU", {"approximate": True}, I8, (0.03, -10), (0.02, -40)),
    "gelu-uint8": ("GELU", {"approximate": False}, U8, (0.05, 131), (0.04, 123)),
}


@pytest.mark.parametrize("case", list(FLOAT_TABLE_CASES))
def test_float_table_ops_all_values(case: str, backend: str) -> None:
    op, options, dt, qi, qo = FLOAT_TABLE_CASES[case]
    x = all_values(dt, 2)
    check_op(model(op, [(x.shape, dt, qi)], (x.shape, dt, qo), **options), [x], backend)


# (s_in, zp_in, s_out, zp_out) of int8 RSQRT; all but "plain" have codes where 1 / sqrt in float,
# scaled and rounded (the table this kernel was before), lands a step below LiteRT's fixed point
RSQRT_PARAMS = {
    "plain": (0.02, -128, 0.05, -128),
    "layer-norm": (0.008, -128, 0.005, -128),  # a transformer's variance -> 1 / sqrt(var + eps)
    "small-output-scale": (0.05, -128, 0.002, -50),
    "zero-points-inside": (0.05, -100, 0.002, -50),
    "large-input-scale": (0.1, -20, 0.003, 10),
}


@pytest.mark.parametrize("params", list(RSQRT_PARAMS))
def test_rsqrt_int8_every_code(params: str, backend: str) -> None:
    """int8 RSQRT (LiteRT's fixed-point ``RsqrtEvalQuantizedInt8``) on every code at or above the
    input's zero point (LiteRT fails the invoke below it), the zero point itself giving 127."""
    si, zi, so, zo = RSQRT_PARAMS[params]
    x = np.tile(np.arange(zi, 128), (2, 1)).astype(I8)
    check_op(model("RSQRT", [(x.shape, I8, (si, zi))], (x.shape, I8, (so, zo))), [x], backend)


# int8 SQRT (elementwise.cc SqrtEvalQuantized): sqrtf(s_in * (q - zp_in)) / s_out, truncated; every
# code from the zero point up; (s_in, zp_in, s_out, zp_out)
SQRT_PARAMS = {
    "plain": (0.02, -3, 0.05, -128),
    "zero-points-inside": (0.07, 5, 0.013, -100),
    "large-input-scale": (0.1, -20, 0.003, 10),
    "x86-cast-overflow": (1.0, -128, 6e-9, 0),  # past 2^31 the C cast gives INT_MIN: the least code
}


@pytest.mark.parametrize("params", list(SQRT_PARAMS))
def test_sqrt_int8_every_code(params: str, backend: str) -> None:
    si, zi, so, zo = SQRT_PARAMS[params]
    x = np.tile(np.arange(zi, 128), (2, 1)).astype(I8)
    check_op(model("SQRT", [(x.shape, I8, (si, zi))], (x.shape, I8, (so, zo))), [x], backend)


# A code below the input's zero point (a negative value) fails LiteRT's invoke ("Rsqrt is only
# defined for positive values", "Sqrt is only defined for non-negative values"); every backend
# raises the cpu kernel's ValueError (webgpu: the table kernel flags the codes, read back with the
# outputs) and runs the next invoke as before.
# (dtype, input quant, output quant, codes below it {position: code}, what the message says)
DOMAIN_CASES = {
    "int8": (I8, (0.02, -3), (0.05, -128), {(0, 1): -4, (1, 36): -128},
             "2 of 74 input codes are below the input's zero point -3, the least -128 (real value -2.5)"),
    "int16": (np.int16, (0.001, 0), (0.0005, 0), {(0, 3): -1, (1, 0): -32768, (1, 5): -7},
              "3 of 74 input codes are below the input's zero point 0, the least -32768 (real value -32.768)"),
}
LITERT_SAYS = {"RSQRT": "Rsqrt is only defined for positive values",
               "SQRT": "Sqrt is only defined for non-negative values"}


@pytest.mark.parametrize("case", list(DOMAIN_CASES))
@pytest.mark.parametrize("op", list(LITERT_SAYS))
def test_below_the_zero_point_fails_the_invoke(op: str, case: str, backend: str) -> None:
    dt, qi, qo, bad, says = DOMAIN_CASES[case]
    good = np.random.default_rng(8).integers(qi[1], np.iinfo(dt).max, (2, 37), endpoint=True).astype(dt)
    x = good.copy()
    for at, code in bad.items():
        x[at] = code
    m = model(op, [(x.shape, dt, qi)], (x.shape, dt, qo))
    with pytest.raises(RuntimeError, match=LITERT_SAYS[op]):
        run_litert(m, [x])
    errors = []
    for name in ("cpu", backend):
        it = Interpreter(model_content=m, backend=name)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        with pytest.raises(ValueError, match=LITERT_SAYS[op]) as e:
            it.invoke()
        errors.append(str(e.value))
        it.set_tensor(it.get_input_details()[0]["index"], good)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(m, [good])[0])
    assert errors[0].endswith(says), errors[0]
    assert errors[1] == errors[0]


@pytest.mark.parametrize("params", ["xnn-typical", "xnn-ties", "xnn-wide", "small-output-scale"])
def test_squared_difference_int8_all_pairs(params: str, backend: str) -> None:
    """int8 SQUARED_DIFFERENCE (layer norms of full-int8 transformers), every pair of codes."""
    p = {**BINARY_PARAMS, "small-output-scale": (0.05, 3, 0.05, 3, 0.002, -128)}[params]
    s1, z1, s2, z2, so, zo = p
    a, b = all_pairs(I8)
    m = model("SQUARED_DIFFERENCE", [(a.shape, I8, (s1, z1)), (b.shape, I8, (s2, z2))], (a.shape, I8, (so, zo)))
    check_op(m, [a, b], backend)


# ---- int16 ADD / SUB / MUL (16x8 mode) ------------------------------------------------------------
INT16_SHAPES = {"same-64k": ((1, 256, 256), (1, 256, 256)), "same-odd": ((1, 1001), (1, 1001)),
                "broadcast-row": ((2, 9, 11), (11,)), "broadcast-both": ((3, 1, 5), (1, 4, 5))}


@pytest.mark.parametrize("act", ["NONE", "RELU"])
@pytest.mark.parametrize("shapes", list(INT16_SHAPES))
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_int16_binary(op: str, shapes: str, act: str, backend: str) -> None:
    """int16 (zero points 0) with an output scale below the inputs': many exact ties, which the
    optimized ADD loop and the reference formula round differently."""
    rng = np.random.default_rng(23)
    sa, sb = INT16_SHAPES[shapes]
    s1, s2 = 0.0003, 0.0004
    so = s1 * s2 * 3000 if op == "MUL" else 0.0002
    a, b = (rng.integers(-20000, 20000, s).astype(np.int16) for s in (sa, sb))
    options = {} if op == "MUL" else {"pot_scale_int16": False}
    m = model(op, [(sa, np.int16, (s1, 0)), (sb, np.int16, (s2, 0))], (np.broadcast_shapes(sa, sb), np.int16, (so, 0)),
              fused_activation_function=act, **options)
    check_op(m, [a, b], backend)


def test_int16_add_tail_takes_the_reference_rounding(backend: str) -> None:
    """Every element an exact tie: LiteRT's optimized ADD rounds the first 16k elements one way
    and the last ``size % 16`` (its scalar loop) the other."""
    from gpulite.backends.cpu.kernels import quantized_int16 as q16

    rng = np.random.default_rng(24)
    a, b = rng.integers(-20000, 20000, (2, 65536)).astype(np.int64)
    params = q16.add_params(*(float(np.float32(s)) for s in (0.0003, 0.0004, 0.0002)), sub=False)
    ties = np.nonzero(q16.add_reference(a, b, params) != q16.add_optimized(a, b, params))[0]
    assert ties.size > 16, "test premise: the two roundings differ on ties"
    x, y = (np.resize(v[ties], (1, 29)).astype(np.int16) for v in (a, b))
    m = model("ADD", [(x.shape, np.int16, (0.0003, 0)), (y.shape, np.int16, (0.0004, 0))],
              (x.shape, np.int16, (0.0002, 0)), pot_scale_int16=False)
    check_op(m, [x, y], backend)


@pytest.mark.parametrize("beta", [1.0, 0.5])
@pytest.mark.parametrize("in_scale", [0.0001, 0.0005, 0.002])
@pytest.mark.parametrize("shape", [(4, 10), (2, 3, 300), (5, 1)], ids=lambda s: "x".join(map(str, s)))
def test_softmax_int16(shape, in_scale: float, beta: float, backend: str) -> None:
    """int16 SOFTMAX (16x8 mode): TFLite's exp and 1/(1+x) tables with interpolation, exact."""
    x = np.random.default_rng(25).integers(-20000, 20000, shape).astype(np.int16)
    m = model("SOFTMAX", [(shape, np.int16, (in_scale, 0))], (shape, np.int16, (1 / 32768, 0)), beta=beta)
    check_op(m, [x], backend)


@pytest.mark.parametrize("ratio", ["1.25", "0.3", "1"])
@pytest.mark.parametrize("op", ["RELU", "RELU6", "LEAKY_RELU"])
def test_int16_activations_all_values(op: str, ratio: str, backend: str) -> None:
    """int16 RELU, RELU6 and LEAKY_RELU (16x8 mode) on every code: TFLite's fixed-point rescale by
    ratios computed in float32 (1.25 = 0.0002 / 0.00016 puts odd codes on ties)."""
    si, so = {"1.25": (0.0002, 0.00016), "0.3": (0.0003, 0.001), "1": (0.0005, 0.0005)}[ratio]
    x = np.arange(-32768, 32768).astype(np.int16).reshape(1, -1)
    options = {"alpha": 0.2} if op == "LEAKY_RELU" else {}
    check_op(model(op, [(x.shape, np.int16, (si, 0))], (x.shape, np.int16, (so, 0)), **options), [x], backend)


# ---- packing edges and broadcasts of the integer kernels (webgpu: narrow codes packed 4 or 2 to a
# word, a thread builds whole words; the last word is partial for these sizes) -------------------
ODD_UNARY = {
    "logistic-int8": ("LOGISTIC", I8, (0.07, 3), (1 / 256, -128), {}),
    "hard_swish-uint8": ("HARD_SWISH", U8, (0.1, 108), (0.05, 28), {}),
    "leaky_relu-int16": ("LEAKY_RELU", np.int16, (0.0003, 0), (0.0002, 0), {"alpha": 0.2}),
    "requantize-int16-int8": ("QUANTIZE", np.int16, (0.00013, 0), (0.05, -2), {}),
}


@pytest.mark.parametrize("n", [1, 3, 5, 1003])
@pytest.mark.parametrize("case", list(ODD_UNARY))
def test_unary_odd_sizes(case: str, n: int, backend: str) -> None:
    op, dt, qi, qo, options = ODD_UNARY[case]
    info = np.iinfo(dt)
    x = np.random.default_rng(n).integers(info.min, info.max + 1, (1, n)).astype(dt)
    out_dt = I8 if op == "QUANTIZE" else dt
    check_op(model(op, [(x.shape, dt, qi)], (x.shape, out_dt, qo), **options), [x], backend)


ODD_BINARY = {  # op, dtype, (a shape, b shape), (q_a, q_b, q_out), options
    "squared_difference-broadcast": ("SQUARED_DIFFERENCE", I8, ((1, 3, 7), (7,)), ((0.05, 3), (0.04, -2), (0.01, -128)),
                                     {}),
    "maximum-int16-both": ("MAXIMUM", np.int16, ((3, 1, 7), (1, 5, 7)), ((0.001, 0),) * 3, {}),
    "minimum-uint8-scalar": ("MINIMUM", U8, ((1, 13), (1,)), ((0.1, 130),) * 3, {}),
    "add-int16-relu-odd": ("ADD", np.int16, ((1, 7, 3), (1, 7, 3)), ((0.0003, 0), (0.0004, 0), (0.0002, 0)),
                           {"fused_activation_function": "RELU", "pot_scale_int16": False}),
    "mul-int16-broadcast-relu_n1_to_1": ("MUL", np.int16, ((2, 5, 3), (5, 1)), ((0.0003, 0), (0.0004, 0), (0.00003, 0)),
                                         {"fused_activation_function": "RELU_N1_TO_1"}),
    "sub-uint8-relu6-odd": ("SUB", U8, ((1, 9), (1, 9)), ((0.04, 125), (0.03, 133), (0.05, 127)),
                            {"fused_activation_function": "RELU6"}),
    "prelu-channel-alpha-odd": ("PRELU", I8, ((1, 3, 5, 3), (1, 1, 3)), ((0.05, 3), (0.004, -7), (0.04, -5)), {}),
}


@pytest.mark.parametrize("case", list(ODD_BINARY))
def test_binary_packing_edges(case: str, backend: str) -> None:
    op, dt, (sa, sb), (qa, qb_, qo), options = ODD_BINARY[case]
    info = np.iinfo(dt)
    rng = np.random.default_rng(len(case))
    lo, hi = (-20000, 20000) if dt == np.int16 else (info.min, info.max + 1)
    a, b = (rng.integers(lo, hi, s).astype(dt) for s in (sa, sb))
    m = model(op, [(sa, dt, qa), (sb, dt, qb_)], (np.broadcast_shapes(sa, sb), dt, qo), **options)
    check_op(m, [a, b], backend)


# What the cpu kernel refuses, the webgpu integer kernels refuse too (they ask it first), so the
# model is refused as on the cpu rather than run on the GPU.
REFUSED = {
    "add-tanh": ("ADD", 2, I8, (0.1, 0), (0.1, 0), {"fused_activation_function": "TANH"}, "fused activation TANH"),
    "logistic-scale": ("LOGISTIC", 1, I8, (0.1, 0), (0.01, -128), {}, r"scale 0\.00390625"),
    "sqdiff-uint8": ("SQUARED_DIFFERENCE", 2, U8, (0.1, 128), (0.1, 128), {}, "int8"),
    "prelu-int16-alpha": ("PRELU", 2, np.int16, (0.001, 0), (0.001, 0), {}, "int8 alpha"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_integer_kernels_refuse_what_the_cpu_refuses(case: str) -> None:
    from tests.webgpu.support import adapter_problem

    if adapter_problem() is not None:
        pytest.skip(adapter_problem())
    op, n_in, dt, qi, qo, options, match = REFUSED[case]
    s = ((4, 5), dt, qi)
    m = model(op, [s] * n_in, ((4, 5), dt, qo), **options)
    for kw in ({"backend": "cpu"}, {"backend": "webgpu", "quantized": "exact"}):
        with pytest.raises(UnsupportedOpError, match=match):
            Interpreter(model_content=m, **kw).allocate_tensors()
