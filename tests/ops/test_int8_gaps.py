"""int8 / int16 ops LiteRT's kernels run quantized that gpulite once refused (issue 23), each
checked on every input code, bit-equal to LiteRT's reference kernels and to default LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops.harness import run_litert
from tests.ops.quant_ref import check_quantized
from tests.ops.test_quantized_elementwise import all_values, model

I8, I16 = np.int8, np.int16

# ABS (elementwise.cc AbsEvalQuantized): |q - zp_in|, rescaled when the scales differ, + zp_out
ABS_CASES = {
    "int8-rescale": (I8, (0.05, 3), (0.03, -100)),
    "int8-same-scale": (I8, (0.04, -20), (0.04, -128)),
    "int8-rescale-up": (I8, (0.01, 0), (0.2, -120)),  # output scale 20x the input's: many ties
    "int16-rescale": (I16, (0.001, 0), (0.0007, 0)),
    "int16-same-scale": (I16, (0.0005, 0), (0.0005, 0)),
}


@pytest.mark.parametrize("case", list(ABS_CASES))
def test_abs_quantized_all_values(case: str, backend: str) -> None:
    dt, qi, qo = ABS_CASES[case]
    x = all_values(dt, 2)
    check_quantized(model("ABS", [(x.shape, dt, qi)], (x.shape, dt, qo)), [x], backend)


# RELU_0_TO_1 (activations.cc QuantizedReluX(0, 1)): rescaled by s_in / s_out, clamped to
# [zp_out + round(0 / s_out), zp_out + round(1 / s_out)]
RELU01_CASES = {
    "int8": (np.int8, (0.005, -10), (1 / 200, -100)),  # 0 and 1 at codes -100 and 100
    "int8-rescale-clamps-inside": (np.int8, (0.05, 3), (0.03, -100)),  # 1.0 at code -67
    "uint8": (np.uint8, (0.005, 120), (1 / 200, 20)),
}


@pytest.mark.parametrize("case", list(RELU01_CASES))
def test_relu_0_to_1_quantized_all_values(case: str, backend: str) -> None:
    dt, qi, qo = RELU01_CASES[case]
    x = all_values(dt, 2)
    check_quantized(model("RELU_0_TO_1", [(x.shape, dt, qi)], (x.shape, dt, qo)), [x], backend)


# NEG, FLOOR_DIV, FLOOR_MOD on quantized int8 / int16: LiteRT's kernels compute on the codes
# and ignore the scales (NEG wraps -128 to -128; FLOOR_DIV saturates -128 // -1 to 127)
@pytest.mark.parametrize("dt", [I8, I16], ids=["int8", "int16"])
def test_neg_quantized_negates_codes(dt, backend: str) -> None:
    x = all_values(dt, 1) if dt == I8 else np.arange(-32768, 32768, 5).astype(dt).reshape(1, -1)
    q = (0.05, 3) if dt == I8 else (0.001, 0)
    check_quantized(model("NEG", [(x.shape, dt, q)], (x.shape, dt, (0.04, -2) if dt == I8 else (0.002, 0))),
                    [x], backend)


def _code_pairs(dt) -> tuple[np.ndarray, np.ndarray]:
    """Every int8 pair with a nonzero divisor; for int16 the extremes and a spread of values."""
    if dt == I8:
        v = np.arange(-128, 128)
    else:
        v = np.r_[-32768, -32767, -1000, -129, -7, -1, 1, 2, 7, 129, 1000, 32767]
    a, b = np.meshgrid(v, v[v != 0], indexing="ij")
    return a.astype(dt).reshape(1, -1), b.astype(dt).reshape(1, -1)


@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD"])
@pytest.mark.parametrize("dt", [I8, I16], ids=["int8", "int16"])
def test_floor_div_mod_quantized_codes(op: str, dt, backend: str) -> None:
    a, b = _code_pairs(dt)
    q1, q2, qo = ((0.05, 3), (0.04, -1), (0.1, 2)) if dt == I8 else ((0.001, 0), (0.002, 0), (0.003, 0))
    check_quantized(model(op, [(a.shape, dt, q1), (b.shape, dt, q2)], (a.shape, dt, qo)), [a, b], backend)


# REDUCE_PROD (reduce.cc QuantizedReduceProd): each product rescaled by s_in / s_out^(1/N)
PROD_CASES = {
    "int8-last-axis": (np.int8, (2, 3, 4), [2], (0.1, 3), None, 1.0),
    "int8-two-axes-keep": (np.int8, (3, 12, 5), [0, 2], (0.05, -2), True, 1 / 8),
    "int8-middle-axis": (np.int8, (4, 6, 3), [1], (0.2, 0), False, 1.0),
    "int16-last-axis": (np.int16, (5, 3), [1], (0.002, 0), False, 1.0),
    "int16-negative-axis": (np.int16, (2, 4, 3), [-2], (0.003, 0), True, 1.0),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_reduce_prod_quantized(case: str, backend: str) -> None:
    from gpulite.testing.tflite_writer import ModelBuilder

    dt, shape, axes, qi, keep, out_factor = PROD_CASES[case]
    n = int(np.prod([shape[a] for a in axes]))
    rng = np.random.default_rng(len(case))
    # values near 1 (codes around 1 / s_in) so the product stays in range and varies
    center = round(1 / qi[0]) + qi[1]
    spread = max(2, center // 3)
    x = rng.integers(center - spread, center + spread, shape).clip(np.iinfo(dt).min, np.iinfo(dt).max).astype(dt)
    x.flat[::7] = -x.flat[::7]  # signs too
    s_out = qi[0] * 1.3 ** (n / 2) * out_factor
    out_shape = tuple(1 if (a in [ax % len(shape) for ax in axes]) else d for a, d in enumerate(shape)) if keep \
        else tuple(d for a, d in enumerate(shape) if a not in [ax % len(shape) for ax in axes])
    mb = ModelBuilder()
    xi = mb.input("x", shape, dt, quant=qi)
    ai = mb.const("axes", np.array(axes, np.int32))
    y = mb.tensor("y", out_shape, dt, quant=(s_out, 0 if dt == I16 else -3))
    mb.op("REDUCE_PROD", [xi, ai], [y], keep_dims=bool(keep))
    mb.output(y)
    check_quantized(mb.build(), [x], backend)


@pytest.mark.parametrize("op", ["NEG", "FLOOR_DIV", "FLOOR_MOD"])
def test_code_ops_keep_their_codes_under_float_quantization(op: str) -> None:
    """webgpu's quantized="float" computes quantized tensors as real values; these three read
    codes in LiteRT, so they keep integer tensors (opdefs.RAW_OPS) and LiteRT's results."""
    from gpulite import Interpreter
    from tests.ops.harness import run_litert
    from tests.webgpu.support import adapter_problem, run

    if adapter_problem() is not None:
        pytest.skip(adapter_problem())
    x = all_values(I8, 1)
    ins = [(x.shape, I8, (0.05, 3))] + ([(x.shape, I8, (0.03, 1))] if op != "NEG" else [])
    feeds = [x] + ([np.where(x == 0, 1, x)[:, ::-1].astype(I8)] if op != "NEG" else [])
    m = model(op, ins, (x.shape, I8, (0.04, -2)))
    got = run(Interpreter(model_content=m, backend="webgpu", quantized="float"), feeds)
    np.testing.assert_array_equal(got[0], run_litert(m, feeds)[0])


# int16 SUM (16x8 mode): LiteRT's default kernel rounds float32(sum) * s_in / s_out half away
# from zero and clamps; its reference kernel (BUILTIN_REF) returns garbage for int16 SUM, so the
# default LiteRT is the oracle (check_op)
SUM16_CASES = {"ties-half-scale": ((0.001, 0), (0.002, 0)), "quarter-scale": ((0.001, 0), (0.004, 0)),
               "odd-scale": ((0.002, 0), (0.0013, 0)), "saturating": ((0.001, 0), (0.0001, 0))}


@pytest.mark.parametrize("case", list(SUM16_CASES))
def test_sum_int16(case: str, backend: str) -> None:
    from gpulite.testing.tflite_writer import ModelBuilder
    from tests.ops.harness import check_op

    qi, qo = SUM16_CASES[case]
    x = np.random.default_rng(3).integers(-3000, 3000, (16, 3, 5)).astype(I16)
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, I16, quant=qi)
    y = mb.tensor("y", (16, 1, 5), I16, quant=qo)
    mb.op("SUM", [xi, mb.const("axes", np.array([1], np.int32))], [y], keep_dims=True)
    mb.output(y)
    check_op(mb.build(), [x], backend)


# int16 EXP / LOG / GELU (16x8 mode): LUTPopulate<int16_t>'s 513 interpolated samples
INT16_TABLE_CASES = {
    "exp": ("EXP", {}, (0.0003, 0), (0.0004, 0)),
    "log": ("LOG", {}, (0.0002, 0), (0.0003, 0)),
    "gelu": ("GELU", {"approximate": False}, (0.0002, 0), (0.00015, 0)),
    "gelu-approximate": ("GELU", {"approximate": True}, (0.0002, 0), (0.00015, 0)),
}


@pytest.mark.parametrize("case", list(INT16_TABLE_CASES))
def test_int16_table_ops_all_values(case: str, backend: str) -> None:
    op, options, qi, qo = INT16_TABLE_CASES[case]
    x = all_values(I16, 1)
    check_quantized(model(op, [(x.shape, I16, qi)], (x.shape, I16, qo), **options), [x], backend)


# int16 RSQRT (elementwise.cc RsqrtEvalQuantizedInt16, zero points 0): LUTPopulate<int16_t>'s 513
# interpolated samples of 1 / sqrt(v), 32767 * s_out at v <= 0; (s_in, s_out)
RSQRT_INT16_SCALES = {
    "plain": (0.001, 0.0005),
    "small-input-scale": (1e-4, 0.01),
    "layer-norm": (3e-5, 0.03),
    "large-input-scale": (0.5, 1e-4),
}


@pytest.mark.parametrize("case", list(RSQRT_INT16_SCALES))
def test_rsqrt_int16_all_values(case: str, backend: str) -> None:
    """Every code from 0 up (LiteRT fails the invoke below the zero point: test_quantized_elementwise)."""
    si, so = RSQRT_INT16_SCALES[case]
    x = np.arange(0, 32768, dtype=I16).reshape(2, -1)
    check_quantized(model("RSQRT", [(x.shape, I16, (si, 0))], (x.shape, I16, (so, 0))), [x], backend)


# int16 SQRT (elementwise.cc SqrtEvalQuantized<int16_t>, zero points 0): sqrtf(s_in * q) / s_out,
# truncated; (s_in, s_out)
SQRT_INT16_SCALES = {
    "plain": (0.001, 0.0005),
    "small-scales": (3e-5, 1e-4),
    "large-input-scale": (0.5, 0.01),
}


@pytest.mark.parametrize("case", list(SQRT_INT16_SCALES))
def test_sqrt_int16_all_values(case: str, backend: str) -> None:
    si, so = SQRT_INT16_SCALES[case]
    x = np.arange(0, 32768, dtype=I16).reshape(2, -1)
    check_quantized(model("SQRT", [(x.shape, I16, (si, 0))], (x.shape, I16, (so, 0))), [x], backend)


@pytest.mark.parametrize("op", ["RSQRT", "SQRT"])
def test_int16_root_refuses_zero_points(op: str) -> None:
    """LiteRT fails int16 RSQRT / SQRT at prepare when a zero point is not 0; gpulite at allocate."""
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError

    m = model(op, [((1, 4), I16, (0.001, 3))], ((1, 4), I16, (0.0005, 0)))
    with pytest.raises(RuntimeError, match="input_offset"):
        run_litert(m, [np.zeros((1, 4), I16)])
    with pytest.raises(UnsupportedOpError, match=rf"int16 {op} needs zero points 0 .*got 3 and 0"):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


# DIV (div.cc / reference_ops::DivElementwise): gemmlowp reciprocal of the divisor, headroom shift,
# one rescale; where a small dividend meets a large divisor the rescale's shift passes 31 and
# LiteRT's x86-64 build returns the dtype's extreme (reproduced: the "small-over-large" pairs)
DIV_CASES = {
    "uint8": (np.uint8, (0.05, 128), (0.04, 120), (0.1, 127), "NONE"),
    "int8": (I8, (0.05, 3), (0.04, -8), (0.1, -1), "NONE"),
    "int8-relu-small-over-large": (I8, (0.02, 0), (0.5, 0), (0.001, 0), "RELU"),
}


@pytest.mark.parametrize("case", list(DIV_CASES))
def test_div_quantized_all_pairs(case: str, backend: str) -> None:
    from tests.ops.test_quantized_elementwise import all_pairs

    dt, q1, q2, qo, act = DIV_CASES[case]
    a, b = (v.reshape(1, -1) for v in all_pairs(dt))
    keep = b[0].astype(np.int64) != q2[1]  # a divisor of value 0 fails the invoke
    a, b = a[:, keep], b[:, keep]
    m = model("DIV", [(a.shape, dt, q1), (b.shape, dt, q2)], (a.shape, dt, qo), fused_activation_function=act)
    check_quantized(m, [a, b], backend, max_saturated=0.6)


def test_div_int16_broadcast(backend: str) -> None:
    rng = np.random.default_rng(9)
    a = rng.integers(-32768, 32768, (1, 64, 33)).astype(I16)
    b = rng.integers(-32768, 32768, (1, 1, 33)).astype(I16)
    b[b == 0] = 7
    m = model("DIV", [(a.shape, I16, (0.001, 0)), (b.shape, I16, (0.002, 0))], (a.shape, I16, (0.0005, 0)))
    check_quantized(m, [a, b], backend)


def test_div_by_a_zero_value_fails_the_invoke() -> None:
    """LiteRT fails the invoke ("data[i] != zero_point"); gpulite raises ZeroDivisionError."""
    from gpulite import Interpreter
    from tests.ops.harness import run_litert

    a, b = np.array([[10, 20]], I8), np.array([[-8, 5]], I8)
    m = model("DIV", [(a.shape, I8, (0.05, 3)), (b.shape, I8, (0.04, -8))], (a.shape, I8, (0.1, 1)))
    with pytest.raises(RuntimeError, match="zero_point"):
        run_litert(m, [a, b])
    it = Interpreter(model_content=m, backend="cpu")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], a)
    it.set_tensor(it.get_input_details()[1]["index"], b)
    with pytest.raises(ZeroDivisionError, match="zero point -8"):
        it.invoke()


@pytest.mark.parametrize("op", ["ADD", "SUB"])
def test_int16_add_sub_pot_flag_with_other_scales(op: str, backend: str) -> None:
    """pot_scale_int16 is true by default in the schema (files not written by the converter keep
    it); LiteRT then takes its general rescale unless all three scales are powers of two."""
    rng = np.random.default_rng(5)
    a, b = (rng.integers(-30000, 30000, (1, 1001)).astype(I16) for _ in range(2))
    m = model(op, [(a.shape, I16, (0.0003, 0)), (b.shape, I16, (0.0004, 0))], (a.shape, I16, (0.0005, 0)),
              pot_scale_int16=True)
    check_quantized(m, [a, b], backend)


def test_int16_add_pot_scales_are_refused() -> None:
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError

    x = np.zeros((1, 8), I16)
    m = model("ADD", [(x.shape, I16, (2.0**-10, 0)), (x.shape, I16, (2.0**-9, 0))], (x.shape, I16, (2.0**-8, 0)),
              pot_scale_int16=True)
    with pytest.raises(UnsupportedOpError, match="power-of-two scales"):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


# int16 LOGISTIC / TANH (16x8 mode; activations.cc + reference_integer_ops::Logistic / Tanh): the
# input rescaled onto 1/(3 * 4096) units, then a 256-entry sigmoid table with linear interpolation
INT16_SIGMOID_CASES = {
    "logistic-exporter-scale": ("LOGISTIC", 7.3402803e-06, 2.0**-15),  # onnx_decoder_a16w8's
    "logistic-1e-4": ("LOGISTIC", 1e-4, 2.0**-15),
    "logistic-pot-2e-11": ("LOGISTIC", 2.0**-11, 2.0**-15),  # a power of two off gemmlowp's: the table
    "logistic-1e-3": ("LOGISTIC", 1e-3, 2.0**-15),
    "tanh-exporter-scale": ("TANH", 7.3402803e-06, 2.0**-15),
    "tanh-1e-4": ("TANH", 1e-4, 2.0**-15),
    "tanh-pot-2e-10": ("TANH", 2.0**-10, 2.0**-15),
    "tanh-out-1-over-32767": ("TANH", 3e-4, 1 / 32767),  # CheckedLog2 takes it as 2**-15
}


@pytest.mark.parametrize("case", list(INT16_SIGMOID_CASES))
def test_int16_logistic_tanh_all_values(case: str, backend: str) -> None:
    op, si, so = INT16_SIGMOID_CASES[case]
    x = all_values(I16, 1)
    check_quantized(model(op, [(x.shape, I16, (si, 0))], (x.shape, I16, (so, 0))), [x], backend)


# Input scales 2**-12 (and for TANH 2**-11) leave Prepare's multiplier 0: LiteRT's default kernel
# then runs gemmlowp's fixed-point logistic / tanh on Q3.12, its reference kernel the table (they
# differ on thousands of codes), so default LiteRT is the oracle
INT16_GEMMLOWP_CASES = {"logistic-2e-12": ("LOGISTIC", 2.0**-12), "tanh-2e-12": ("TANH", 2.0**-12),
                        "tanh-2e-11": ("TANH", 2.0**-11)}


@pytest.mark.parametrize("case", list(INT16_GEMMLOWP_CASES))
def test_int16_logistic_tanh_gemmlowp_scales(case: str, backend: str) -> None:
    from tests.ops.harness import check_op, run_litert
    from tests.ops.quant_ref import run_litert_reference

    op, si = INT16_GEMMLOWP_CASES[case]
    x = all_values(I16, 1)
    m = model(op, [(x.shape, I16, (si, 0))], (x.shape, I16, (2.0**-15, 0)))
    assert (run_litert(m, [x])[0] != run_litert_reference(m, [x])[0]).sum() > 1000  # the two paths do differ
    check_op(m, [x], backend)


INT16_SIGMOID_REFUSED = {  # LiteRT refuses these too (Prepare)
    "logistic-input-zero-point": ("LOGISTIC", (1e-4, 3), (2.0**-15, 0), "zero points 0"),
    "logistic-output-scale": ("LOGISTIC", (1e-4, 0), (2.0**-14, 0), "exactly 2\\*\\*-15"),
    "tanh-output-zero-point": ("TANH", (1e-4, 0), (2.0**-15, 5), "zero points 0"),
}


@pytest.mark.parametrize("case", list(INT16_SIGMOID_REFUSED))
def test_int16_logistic_tanh_refusals(case: str) -> None:
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError
    from tests.ops.harness import run_litert

    op, qi, qo, match = INT16_SIGMOID_REFUSED[case]
    x = all_values(I16, 1)
    m = model(op, [(x.shape, I16, qi)], (x.shape, I16, qo))
    with pytest.raises(RuntimeError):
        run_litert(m, [x])
    with pytest.raises(UnsupportedOpError, match=match):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


def test_quantized_scatter_nd_keeps_its_codes_under_float_quantization() -> None:
    """LiteRT's int8 SCATTER_ND fills code 0 and adds the update codes (not their values): under
    quantized="float" webgpu keeps its tensors integer (opdefs.RAW_OPS), so LiteRT's codes,
    not the zero point where nothing lands nor a value sum for the duplicate."""
    from gpulite import Interpreter
    from gpulite.testing.tflite_writer import ModelBuilder
    from tests.ops.harness import run_litert
    from tests.webgpu.support import adapter_problem, run

    if adapter_problem() is not None:
        pytest.skip(adapter_problem())
    mb = ModelBuilder()
    i = mb.input("i", (3, 1), np.int32)
    u = mb.input("u", (3, 2), I8, quant=(0.1, 5))
    y = mb.tensor("y", (4, 2), I8, quant=(0.1, 5))
    mb.op("SCATTER_ND", [i, u, mb.const("s", np.array([4, 2], np.int32))], [y])
    mb.output(y)
    m = mb.build()
    feeds = [np.array([[1], [3], [1]], np.int32), np.array([[10, 20], [30, 40], [50, 60]], I8)]
    got = run(Interpreter(model_content=m, backend="webgpu", quantized="float"), feeds)
    np.testing.assert_array_equal(got[0], run_litert(m, feeds)[0])


# int8/uint8 LOG_SOFTMAX (activations.cc, optimized_ops::LogSoftmax): the softmax exp table, a float32
# sum, logf, and rint(s_in / s_out * x - (s_in * max + log_sum) / s_out) + zp; output 16/256, zp 127 / 255
LOG_SOFTMAX_CASES = {
    "int8-wide-rows": (I8, (4, 256), (0.05, 3)),
    "int8-coarse": (I8, (3, 5, 7), (0.3, -20)),
    "int8-short-rows": (I8, (64, 3), (0.2, 5)),
    "uint8-wide-rows": (np.uint8, (4, 256), (0.05, 131)),
    "uint8-odd-scale": (np.uint8, (64, 3), (0.1234, 0)),
}


@pytest.mark.parametrize("case", list(LOG_SOFTMAX_CASES))
def test_log_softmax_quantized(case: str, backend: str) -> None:
    dt, shape, qi = LOG_SOFTMAX_CASES[case]
    info = np.iinfo(dt)
    half = min(int(5 / qi[0]), 128)  # values spread over ~10: log-probabilities above the output's -16
    x = np.random.default_rng(len(case)).integers(qi[1] - half, qi[1] + half, shape).clip(info.min, info.max)
    x = x.astype(dt)
    qo = (16 / 256, 127 if dt == I8 else 255)
    check_quantized(model("LOG_SOFTMAX", [(shape, dt, qi)], (shape, dt, qo)), [x], backend)


def test_log_softmax_quantized_needs_litert_output_quantization() -> None:
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError
    from tests.ops.harness import run_litert

    x = np.zeros((2, 8), I8)
    m = model("LOG_SOFTMAX", [(x.shape, I8, (0.05, 3))], (x.shape, I8, (16 / 256, 0)))
    with pytest.raises(RuntimeError):
        run_litert(m, [x])
    with pytest.raises(UnsupportedOpError, match="zero point 127"):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


# int16 PRELU (16x8 mode: int16 input and output, int8 alpha; reference_ops::Prelu): the 8-bit
# rescales, with the multipliers' ratios in float32 (in double, "float-ratios" misses 5,605 codes)
PRELU16_CASES = {
    "float-ratios": ((0.001, 0), (0.01, 0), (0.0012, 0), True),
    "alpha-zero-point": ((0.0003, 0), (0.02, -5), (0.0002, 0), True),
    "alpha-runtime-broadcast": ((0.00051, 0), (0.0039, -128), (0.00077, 0), False),
}


@pytest.mark.parametrize("case", list(PRELU16_CASES))
def test_prelu_int16_all_codes(case: str, backend: str) -> None:
    from gpulite.testing.tflite_writer import ModelBuilder

    qi, qa, qo, const = PRELU16_CASES[case]
    x = np.arange(-32768, 32768).astype(I16).reshape(1, 8192, 8)
    a = np.array([-128, -77, -1, 0, 1, 50, 101, 127], I8).reshape(1, 1, 8)
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, I16, quant=qi)
    ai = mb.const("a", a, quant=qa) if const else mb.input("a", a.shape, I8, quant=qa)
    y = mb.tensor("y", x.shape, I16, quant=qo)
    mb.op("PRELU", [xi, ai], [y])
    mb.output(y)
    check_quantized(mb.build(), [x] if const else [x, a], backend)


def test_prelu_int16_alpha_must_be_int8() -> None:
    """LiteRT reads an int16 PRELU's alpha as int8 bytes whatever its type; an int16 alpha is refused."""
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError

    x = np.zeros((1, 4, 8), I16)
    alpha = ("const", np.ones((8,), I16), (0.01, 0))
    m = model("PRELU", [(x.shape, I16, (0.001, 0)), alpha], (x.shape, I16, (0.001, 0)))
    with pytest.raises(UnsupportedOpError, match="int8 alpha"):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


# 8-bit SOFTMAX into an int16 output (activations.cc SoftmaxQuantized<int8/uint8, int16>, the optimized
# kernel's float table): p = table * (1 / (sum * s_out)), std::round(p) + zp, clamped to int16. LiteRT's
# reference kernel assumes another output grid, so default LiteRT is the oracle
SOFTMAX16_CASES = {
    "int8-to-2e-15": (I8, (4, 50), (0.05, 3), (1 / 32768, 0)),
    "int8-to-2e-16-zp-min": (I8, (3, 256), (0.02, 3), (1 / 65536, -32768)),
    "uint8-odd-output": (np.uint8, (2, 1000), (0.01, 131), (0.0001, 7)),
    "uint8-short-rows": (np.uint8, (64, 3), (0.3, 131), (1 / 32768, -100)),
}


@pytest.mark.parametrize("case", list(SOFTMAX16_CASES))
def test_softmax_8bit_to_int16(case: str, backend: str) -> None:
    from tests.ops.harness import check_op

    dt, shape, qi, qo = SOFTMAX16_CASES[case]
    info = np.iinfo(dt)
    x = np.random.default_rng(len(case)).integers(info.min, info.max + 1, shape).astype(dt)
    check_op(model("SOFTMAX", [(shape, dt, qi)], (shape, I16, qo), beta=1.0), [x], backend)
