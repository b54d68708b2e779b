"""Quantized models on the GPU (``quantized="float"``, the default) and the ``"exact"`` option.

Under ``"float"`` the WebGPU backend runs a quantized model as the TFLite GPU delegate does
(docs/webgpu.md, "Quantized models"): weights dequantized at load, float32 arithmetic, and
QUANTIZE/DEQUANTIZE at the graph's edges, all in one GPU partition. It is not LiteRT's
integer arithmetic, so the outputs are compared within a stated number of quantization steps:

- a single op rounds once in both: LiteRT requantizes its integer accumulator with a
  fixed-point multiplier (or a float one, in XNNPACK) whose error is below one step, the GPU
  rounds the exact float value once at the output QUANTIZE; the two can land on neighbouring
  codes, never further apart: **1 step**.
- a model adds one such rounding per requantized tensor on LiteRT's side only (the GPU keeps
  the float value between ops), and the errors partly cancel through the layers: **2 steps**
  of the output scale for the seven-layer CNN below (measured: at most 1).

Each case must also run wholly on the GPU (one partition, no crossing), so a comparison cannot
pass on the CPU fallback; and ``"exact"`` must give LiteRT's integers exactly (integer WGSL kernels
where the GPU has them, the CPU's elsewhere).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.single_op import C, In, single_op
from tests.ops.test_conv import CASES, DW_CASES, _quant_model
from tests.ops.test_fc import _fc_quant_model
from tests.ops.test_pool import CASES as POOL_CASES
from tests.ops.test_pool import _model as pool_model
from tests.ops.test_quantized_elementwise import DOMAIN_CASES, LITERT_SAYS, REQUANTIZE, all_pairs, all_values, model
from tests.webgpu.support import gpu_only, require_adapter, run

require_adapter()

DATA = Path(__file__).resolve().parent.parent / "data" / "quantized"  # tools/make_quantized_test_models.py
I8, U8 = np.int8, np.uint8


def litert(m: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    return run(LiteRT(model_content=m), inputs)


def on_gpu(m: bytes, inputs: list[np.ndarray], **options) -> list[np.ndarray]:
    it = Interpreter(model_content=m, backend="webgpu", **options)
    out = run(it, inputs)
    gpu_only(it.get_plan())
    return out


def assert_steps(actual: np.ndarray, expected: np.ndarray, steps: int) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    diff = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
    assert diff.max() <= steps, f"{int(diff.max())} steps apart (allowed {steps}) at {np.argmax(diff)}"


SINGLE_OPS = {
    "conv-int8-per-channel": lambda: _quant_model("CONV_2D", CASES["k3-s1-same-relu6"], "int8-per-channel", 12),
    "conv-uint8": lambda: _quant_model("CONV_2D", CASES["k3-s2-valid-relu"], "uint8-per-tensor", 12),
    "depthwise-int8": lambda: _quant_model("DEPTHWISE_CONV_2D", DW_CASES["k3-s1-same-relu6"], "int8-per-channel", 13),
}


def _pool(op: str, case: str):
    x = np.random.default_rng(21).integers(-128, 128, POOL_CASES[case][0]).astype(np.int8)
    return pool_model(op, POOL_CASES[case], np.int8, (0.05, -4)), x


def _mean(axes: list[int], keep: bool):
    x = np.random.default_rng(4).integers(-128, 128, (2, 5, 7, 3)).astype(np.int8)
    return single_op("MEAN", [In(x, (0.1, 3)), C(np.array(axes, np.int32))], keep_dims=keep,
                     out_quant=(0.07, -5))[0], x


def _concat():
    rng = np.random.default_rng(8)
    xs = [rng.integers(0, 256, (1, 2, n)).astype(np.uint8) for n in (5, 4, 3)]
    ins = [In(x, q) for x, q in zip(xs, [(0.1, 3), (0.05, 200), (0.2, 128)], strict=True)]
    return single_op("CONCATENATION", ins, axis=-1, out_quant=(0.2, 128))[0], xs


SINGLE_OPS.update({
    "fc-int8-per-channel": lambda: _fc_quant_model("2d-relu", "int8-per-channel", 5),
    "fc-uint8-keep-dims": lambda: _fc_quant_model("4d-keep-dims-relu6", "uint8-per-tensor", 5),
    "avg-pool": lambda: _pool("AVERAGE_POOL_2D", "f5-s3-same-relu"),
    "max-pool": lambda: _pool("MAX_POOL_2D", "f3x2-s1x2-valid-relu_n1_to_1"),
    "mean-spatial": lambda: _mean([1, 2], True),
    "mean-channels": lambda: _mean([3], False),
    "concat-uint8-requantizing": _concat,
})


@pytest.mark.parametrize("case", list(SINGLE_OPS))
def test_quantized_op_runs_on_the_gpu(case: str) -> None:
    m, x = SINGLE_OPS[case]()
    xs = x if isinstance(x, list) else [x]
    assert_steps(on_gpu(m, xs)[0], litert(m, xs)[0], 1)


@pytest.mark.parametrize("dtype", [I8, U8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "MUL", "SUB"])
def test_quantized_binary_runs_on_the_gpu(op: str, dtype) -> None:
    a, b = all_pairs(dtype)
    z = 0 if dtype == I8 else 128
    m = model(op, [(a.shape, dtype, (0.02, -3 + z)), (b.shape, dtype, (0.035, 5 + z))],
              (a.shape, dtype, (0.05 if op != "MUL" else 0.3, -10 + z)))
    assert_steps(on_gpu(m, [a, b])[0], litert(m, [a, b])[0], 1)


ACTIVATIONS = {"logistic": ("LOGISTIC", I8, (0.07, 3), (1 / 256, -128)),
               "tanh": ("TANH", U8, (0.03, 130), (1 / 128, 128)),
               "softmax": ("SOFTMAX", I8, (0.2, 0), (1 / 256, -128))}


@pytest.mark.parametrize("case", list(ACTIVATIONS.values()), ids=list(ACTIVATIONS))
def test_quantized_activations_run_on_the_gpu(case) -> None:
    op, dt, qi, qo = case
    x = all_values(dt, 2)
    m = model(op, [(x.shape, dt, qi)], (x.shape, dt, qo), **({"beta": 1.0} if op == "SOFTMAX" else {}))
    assert_steps(on_gpu(m, [x])[0], litert(m, [x])[0], 1)


@pytest.mark.parametrize("case", ["int8-int8-xnn", "int8-uint8", "int16-int8"])
def test_requantize_runs_on_the_gpu(case: str) -> None:
    src, qi, dst, qo = REQUANTIZE[case]
    info = np.iinfo(src)
    x = np.linspace(info.min, info.max, 1001).astype(src).reshape(1, -1)
    m = model("QUANTIZE", [(x.shape, src, qi)], (x.shape, dst, qo))
    assert_steps(on_gpu(m, [x])[0], litert(m, [x])[0], 1)


def test_dequantized_weights_of_a_hybrid_fully_connected() -> None:
    """Float activations, int8 weights (dynamic-range models): float on the GPU, equal to the
    dequantized weights' product; LiteRT quantizes each input row to int8 (step max|x| / 127),
    so it is within half a step times sum|w| of that."""
    rng = np.random.default_rng(3)
    wq = rng.integers(-127, 128, (8, 16)).astype(np.int8)
    mb = ModelBuilder()
    x = mb.input("x", (2, 16), np.float32)
    w = mb.const("w", wq, quant=(0.01, 0))
    y = mb.tensor("y", (2, 8), np.float32)
    mb.op("FULLY_CONNECTED", [x, w, -1], [y])
    mb.output(y)
    m = mb.build()
    xv = rng.standard_normal((2, 16)).astype(np.float32)
    got = on_gpu(m, [xv])[0]
    np.testing.assert_allclose(got, xv.astype(np.float64) @ (wq.T * 0.01), rtol=1e-5, atol=1e-5)
    half_step = np.abs(xv).max(axis=1, keepdims=True) / 127 / 2
    bound = half_step * (np.abs(wq) * 0.01).sum(axis=1)
    assert np.all(np.abs(got - litert(m, [xv])[0]) <= bound + 1e-6)


@pytest.mark.parametrize("kind", ["int8_float_io", "int8_io", "fp16", "dynamic_range"])
def test_small_cnn_is_one_gpu_partition(kind: str) -> None:
    m = (DATA / f"small_cnn_{kind}.tflite").read_bytes()
    it = Interpreter(model_content=m, backend="webgpu")
    d = it.get_input_details()[0]
    rng = np.random.default_rng(5)
    for _ in range(4):
        x = rng.uniform(-1, 1, d["shape"]).astype(np.float32)
        if d["dtype"] != np.float32:
            s, z = d["quantization"]
            x = np.clip(np.round(x / s) + z, -128, 127).astype(d["dtype"])
        got, want = run(it, [x])[0], litert(m, [x])[0]
        if kind == "fp16":  # float16 weights dequantized at load: a float model
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        elif kind == "dynamic_range":
            # LiteRT's hybrid kernels quantize each activation row to int8 before the product;
            # the GPU (as the delegate) multiplies the float activations by the dequantized
            # weights: within the webgpu bound, 1e-3 * max(1, max|ref|).
            assert np.abs(got - want).max() <= 1e-3 * max(1.0, float(np.abs(want).max()))
        elif kind == "int8_io":
            assert_steps(got, want, 2)
        else:  # float output of a DEQUANTIZE: steps of the int8 tensor it dequantizes
            scale = 1 / 256  # the softmax's int8 output grid
            assert np.abs(got - want).max() <= 2 * scale + 1e-7
    gpu_only(it.get_plan())
    ops = {op for p in it.get_plan()["partitions"] for op in p["ops"]}
    # a HARD_SWISH after a conv runs in its epilogue (the fusion), as a step of that node
    ops |= {"HARD_SWISH" for n in it.graph.nodes for s in n.epilogue if s.kind == "hard_swish"}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "HARD_SWISH", "FULLY_CONNECTED"} <= ops


def test_exact_gives_litert_integers() -> None:
    """The integer matrix products run on the GPU (kernels/qgemm.py, qconv.py); ops without
    integer WGSL kernels on the CPU; together LiteRT's integers exactly."""
    m = (DATA / "small_relu_cnn_int8_io.tflite").read_bytes()
    rng = np.random.default_rng(6)
    x = rng.integers(-128, 128, (1, 16, 16, 3)).astype(np.int8)
    exact = Interpreter(model_content=m, backend="webgpu", quantized="exact")
    np.testing.assert_array_equal(run(exact, [x])[0], litert(m, [x])[0])
    gpu_ops = {op for p in exact.get_plan()["partitions"] if p["backend"] == "webgpu" for op in p["ops"]}
    cpu_ops = {op for p in exact.get_plan()["partitions"] if p["backend"] == "cpu" for op in p["ops"]}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"} <= gpu_ops - cpu_ops
    assert_steps(on_gpu(m, [x])[0], litert(m, [x])[0], 2)


def _dequantized_op(op: str, dtype, s_in: float, s_out: float) -> tuple[bytes, np.ndarray]:
    """DEQUANTIZE -> float32 ``op`` -> QUANTIZE on every code of ``dtype`` (onnx2tf's 16x8
    decoders keep their ELU so, LiteRT having no int16 one)."""
    info = np.iinfo(dtype)
    shape = (1, (info.max - info.min + 1) // 64, 64)
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype, quant=(s_in, 0))
    f = mb.tensor("f", shape, np.float32)
    mb.op("DEQUANTIZE", [x], [f])
    g = mb.tensor("g", shape, np.float32)
    mb.op(op, [f], [g])
    y = mb.tensor("y", shape, dtype, quant=(s_out, 0))
    mb.op("QUANTIZE", [g], [y])
    mb.output(y)
    return mb.build(), np.arange(info.min, info.max + 1).astype(dtype).reshape(shape)


@pytest.mark.parametrize(("op", "dtype", "s_in", "s_out"), [
    ("ELU", np.int16, 2.0 ** -12, 2.0 ** -14),
    ("LOGISTIC", np.int16, 2.0 ** -11, 2.0 ** -15), ("TANH", np.int16, 2.0 ** -12, 2.0 ** -15),
    ("EXP", np.int16, 2.0 ** -13, 2.0 ** -13)])
def test_float_op_on_dequantized_codes_is_the_cpus(op: str, dtype, s_in: float, s_out: float) -> None:
    """Under "exact", a float32 op between DEQUANTIZE and QUANTIZE gives the cpu backend's
    float32 values (kernels/dequantized_table.py), so every output code is the cpu's, where
    WGSL's exp may be ulps off and the QUANTIZE turns that into a code; both within one code
    of LiteRT's builtin kernels (whose libm the cpu's float32 math can be an ulp from)."""
    m, x = _dequantized_op(op, dtype, s_in, s_out)
    got = on_gpu(m, [x], quantized="exact")[0]
    cpu = run(Interpreter(model_content=m, backend="cpu"), [x])[0]
    np.testing.assert_array_equal(got, cpu)
    assert len(np.unique(cpu)) > np.iinfo(dtype).max // 8, "the case is degenerate"
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType
    kernels = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    builtin = run(LiteRT(model_content=m, experimental_op_resolver_type=kernels), [x])[0]
    assert_steps(got, builtin, 1)


def test_quantized_option_is_checked() -> None:
    with pytest.raises(ValueError, match="quantized must be 'float' or 'exact'"):
        Interpreter(model_content=(DATA / "small_cnn_int8_io.tflite").read_bytes(), backend="webgpu",
                    quantized="int8")


def test_ops_reading_codes_keep_integer_tensors() -> None:
    """CAST reads a quantized tensor's codes, not its value: the rewrite leaves its input int8
    (LiteRT's exact result) while the ADD beside it computes in float on the GPU."""
    mb = ModelBuilder()
    x = mb.input("x", (2, 8), np.int8, quant=(0.1, 3))
    c = mb.tensor("c", (2, 8), np.float32)
    mb.op("CAST", [x], [c])
    s = mb.tensor("s", (2, 8), np.int8, quant=(0.2, -1))
    mb.op("ADD", [x, x], [s])
    mb.output(c, s)
    m = mb.build()
    xv = np.arange(-128, 128, 16, dtype=np.int8).reshape(2, 8)
    it = Interpreter(model_content=m, backend="webgpu")
    got = run(it, [xv])
    want = litert(m, [xv])
    np.testing.assert_array_equal(got[0], want[0])  # the codes, cast
    assert_steps(got[1], want[1], 1)
    placed = {op: p["backend"] for p in it.get_plan()["partitions"] for op in p["ops"]}
    assert placed["ADD"] == "webgpu"


def test_nodes_on_the_cpu_keep_litert_integers() -> None:
    """A node the GPU will not run (here forced by ``cpu_ops``) keeps its int8 tensors under
    quantized='float': the CPU runs LiteRT's integer ADD on it, exactly, between edge
    conversions, while the MUL after it computes in float on the GPU."""
    a, b = all_pairs(I8)
    mb = ModelBuilder()
    x, y = (mb.input(n, a.shape, np.int8, quant=q) for n, q in (("a", (0.02, -3)), ("b", (0.035, 5))))
    s = mb.tensor("s", a.shape, np.int8, quant=(0.05, -10))
    mb.op("ADD", [x, y], [s])
    p = mb.tensor("p", a.shape, np.int8, quant=(0.1, 2))
    mb.op("MUL", [s, s], [p])
    mb.output(s, p)
    m = mb.build()
    it = Interpreter(model_content=m, backend="webgpu", cpu_ops=["ADD"])
    got, want = run(it, [a, b]), litert(m, [a, b])
    np.testing.assert_array_equal(got[0], want[0])
    assert_steps(got[1], want[1], 1)
    placed = {op: p["backend"] for p in it.get_plan()["partitions"] for op in p["ops"]}
    assert placed["ADD"] == "cpu" and placed["MUL"] == "webgpu"


@pytest.mark.parametrize("op", ["LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "EQUAL"])
def test_int16_comparisons_read_what_litert_reads(op: str) -> None:
    """LiteRT 2.3 compares quantized int16 codes, scales aside, for the ordering comparisons (and
    rescales for EQUAL): under quantized='float' the ordering ones keep their int16 codes, so the
    GPU gives LiteRT's booleans, not a comparison of real values."""
    from tests.ops.test_logic import compare_model

    rng = np.random.default_rng(16)
    a = rng.integers(-16000, 16000, (6, 64)).astype(np.int16)
    b = rng.integers(-32768, 32768, a.shape).astype(np.int16)
    b[:2] = 2 * a[:2]  # equal real values, different codes
    b[2:4] = a[2:4]  # equal codes, different real values
    m = compare_model(op, a.shape, b.shape, "int16", qa=(0.5, 0), qb=(0.25, 0))
    np.testing.assert_array_equal(on_gpu(m, [a, b]), litert(m, [a, b]))


def _domain_model(op: str, case: str, where: str) -> tuple[bytes, list[np.ndarray], list[np.ndarray]]:
    """(model, inputs with codes below the zero point of ``op``'s input, inputs without): ``op``
    reads a graph input (``DOMAIN_CASES``' codes) or a SUB's output on the same grid."""
    dt, qi, qo, bad, _ = DOMAIN_CASES[case]
    rng = np.random.default_rng(8)
    good = rng.integers(qi[1], np.iinfo(dt).max, (2, 37), endpoint=True).astype(dt)
    if where == "graph-input":
        x = good.copy()
        for at, code in bad.items():
            x[at] = code
        return model(op, [(x.shape, dt, qi)], (x.shape, dt, qo)), [x], [good]
    mb = ModelBuilder()
    a, b = (mb.input(n, good.shape, dt, quant=qi) for n in "ab")
    d = mb.tensor("d", good.shape, dt, quant=qi)
    mb.op("SUB", [a, b], [d])
    y = mb.tensor("y", good.shape, dt, quant=qo)
    mb.op(op, [d], [y])
    mb.output(y)
    av = rng.integers(0, 100, good.shape).astype(dt)
    bv = av.copy()
    bv[0, 5] += 7  # a - b: 7 and 3 steps below 0
    bv[1, 2] += 3
    return mb.build(), [av, bv], [av, av // 2]


@pytest.mark.parametrize("where", ["graph-input", "computed"])
@pytest.mark.parametrize("case", list(DOMAIN_CASES))
@pytest.mark.parametrize("op", list(LITERT_SAYS))
def test_float_mode_fails_below_the_zero_point(op: str, case: str, where: str) -> None:
    """Under quantized='float' an int8 / int16 RSQRT or SQRT computes in float32 but checks the
    codes its input stands for (kernels/activations.py): codes below the zero point, where
    LiteRT fails the invoke, raise the cpu backend's ValueError word for word, whether the input
    is the graph's or computed on the GPU (a SUB's), with no dispatch added; the next invoke
    gives what a fresh interpreter gives (the check's words were cleared)."""
    m, bad, good = _domain_model(op, case, where)
    with pytest.raises(RuntimeError, match=LITERT_SAYS[op]):
        litert(m, bad)
    with pytest.raises(ValueError, match=LITERT_SAYS[op]) as cpu:
        run(Interpreter(model_content=m, backend="cpu"), bad)
    it = Interpreter(model_content=m, backend="webgpu")
    with pytest.raises(ValueError, match=LITERT_SAYS[op]) as gpu:
        run(it, bad)
    assert str(gpu.value) == str(cpu.value)
    plan = it.get_plan()
    gpu_only(plan)
    assert plan["quantized"] == "float" and plan["dispatches_per_invoke"] == plan["nodes"]
    got = run(it, good)[0]
    np.testing.assert_array_equal(got, on_gpu(m, good)[0])
    if DOMAIN_CASES[case][0] == I8:  # int16 RSQRT in float is not LiteRT's interpolated table
        assert_steps(got, litert(m, good)[0], 1)


@pytest.mark.parametrize("op", list(LITERT_SAYS))
def test_float32_sqrt_of_negatives_does_not_raise(op: str) -> None:
    """The check is for quantized inputs only: a float32 SQRT / RSQRT of negative values runs
    (LiteRT gives NaN there; WGSL leaves the value to the driver), the rest as LiteRT."""
    x = np.array([[-4.0, -1e-30, 0.25, 4.0, 9.0]], np.float32)
    m = model(op, [(x.shape, np.float32, None)], (x.shape, np.float32, None))
    want = litert(m, [x])[0]
    assert np.isnan(want[0, :2]).all()
    np.testing.assert_allclose(on_gpu(m, [x])[0][0, 2:], want[0, 2:], rtol=1e-6)


def test_float_mode_sqrt_of_a_value_rounding_to_the_zero_point() -> None:
    """A SQRT input computed in float a fraction of a step below 0 (a MUL's -0.001 .. -0.004 on
    a 0.01 grid) stands for the zero point's code: LiteRT takes it as 0, so no error and the
    output's zero point, where sqrt of the negative float would be NaN (which the output
    QUANTIZE made the least code). (RSQRT there is inverseSqrt(0), which WGSL leaves to the driver.)"""
    mb = ModelBuilder()
    x = mb.input("x", (1, 48), np.int8, quant=(0.01, 0))
    c = mb.const("c", np.array([-1], np.int8), quant=(0.1, 0))
    d = mb.tensor("d", (1, 48), np.int8, quant=(0.01, 0))
    mb.op("MUL", [x, c], [d])
    y = mb.tensor("y", (1, 48), np.int8, quant=(0.05, -100))
    mb.op("SQRT", [d], [y])
    mb.output(y)
    m = mb.build()
    xv = np.arange(-43, 5, dtype=np.int8).reshape(1, 48)  # the last four: -0.001 .. -0.004
    got, want = on_gpu(m, [xv])[0], litert(m, [xv])[0]
    np.testing.assert_array_equal(got[0, -5:], np.full(5, -100, np.int8))
    np.testing.assert_array_equal(got[0, -5:], want[0, -5:])
    assert_steps(got, want, 1)
