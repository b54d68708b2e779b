"""precision="fp16" on a device with shader-f16: float16 weights, f16 products in the matrix
product and the depthwise, float32 activations and every other sum and product.

What fp16 means here (docs/webgpu.md, "Precision"): the constant operands of the convolutions,
FULLY_CONNECTED and the binary elementwise ops (biases and PReLU alphas included) are stored in
the arena as IEEE float16, rounded to nearest even at allocate_tensors. The nodes without f16
math (F32_MATH) must equal, to float32 accuracy, LiteRT running the same model with its weights
rounded to float16 beforehand -- and must differ from LiteRT on the original weights, which
shows the rounding really happened (a silent fp32 run fails that half). The nodes with f16 math
(CONV_2D and FULLY_CONNECTED with constant weights, DEPTHWISE_CONV_2D with multiplier 1 and
channels a multiple of 4: F16_MATH) must stay within F16_MATH_RTOL of that reference and differ
from it by more than float32 accuracy (a silent f32-math run fails that half); their programs
are built with ``enable f16;`` and math "f16". The fallback on a device without shader-f16 is tested in test_device.py;
the zoo models in fp16 against LiteRT in test_models.py.
"""

from __future__ import annotations

import logging
import struct

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends.webgpu.context import F16_MAX
from gpulite.testing.tflite_writer import ModelBuilder
from tests.compare import assert_same
from tests.webgpu.support import gpu_only, require_adapter, run

require_adapter()

from gpulite.backends.webgpu import get_device  # noqa: E402

F32 = np.float32
RTOL = 1e-5  # the op suite's float32 bound: fp16 weights are exact in float32
# f16 math: inputs rounded to f16 (2^-11 relative), f16 products summed four at a time, f32
# accumulation: documented in docs/webgpu.md ("Precision"); measured at most 1.0e-3 here (conv-c4).
F16_MATH_RTOL = 2e-3


@pytest.fixture(scope="module", autouse=True)
def _needs_shader_f16():
    dev = get_device()
    if not dev.has_f16:
        pytest.skip(f"{dev.name} has no shader-f16: fp16 runs as fp32 there (test_device.py checks the fallback)")


@pytest.fixture(autouse=True, params=["f16", "packed"])
def loads(request, monkeypatch) -> str:
    """Every test with both ways of reading the float16 weights: WGSL's f16 type (``enable
    f16;``) and unpack2x16float of u32 words (the default on CPU adapters)."""
    monkeypatch.setenv("GPULITE_F16_LOADS", request.param)
    return "f16" if request.param == "f16" else "f16-packed"


def _f16(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float16).astype(F32)


def _conv(mb: ModelBuilder, x: int, w: np.ndarray, b: np.ndarray, op: str, out_shape, **opts) -> int:
    y = mb.tensor("y", out_shape, F32)
    mb.op(op, [x, mb.const("w", w), mb.const("b", b)], [y], **opts)
    return y


def _model(case: str, round_consts) -> tuple[bytes, list[np.ndarray]]:
    """Single-op (or op + PRELU) model ``case``; ``round_consts`` maps every float constant."""
    rng = np.random.default_rng(7)
    c = lambda *shape: round_consts(rng.standard_normal(shape).astype(F32))  # noqa: E731
    mb = ModelBuilder()
    shapes = {"conv-c4": (1, 7, 6, 8), "conv-c3": (1, 7, 6, 3), "depthwise-c4": (1, 7, 6, 8),
              "depthwise-mult2": (1, 7, 6, 3), "conv-prelu": (1, 7, 6, 8), "fc": (2, 40), "fc-runtime": (2, 40),
              "transpose-conv": (1, 4, 5, 4), "transpose-conv-bias": (1, 5, 6, 4), "add-const": (1, 4, 5, 6),
              "mul-broadcast": (1, 4, 5, 6), "prelu": (1, 4, 5, 6), "conv-beyond-f16": (1, 5, 5, 4)}
    shape = shapes[case]
    x = mb.input("x", shape, F32)
    feeds = [rng.uniform(-2, 2, shape).astype(F32)]
    same = dict(padding="SAME", stride_h=1, stride_w=1)
    if case in ("conv-c4", "conv-c3"):
        y = _conv(mb, x, c(5, 3, 3, shape[3]), c(5), "CONV_2D", (1, 7, 6, 5), fused_activation_function="RELU6",
                  **same)
    elif case == "depthwise-c4":
        y = _conv(mb, x, c(1, 3, 3, 8), c(8), "DEPTHWISE_CONV_2D", (1, 7, 6, 8), depth_multiplier=1, **same)
    elif case == "depthwise-mult2":
        y = _conv(mb, x, c(1, 3, 3, 6), c(6), "DEPTHWISE_CONV_2D", (1, 7, 6, 6), depth_multiplier=2, **same)
    elif case == "conv-prelu":
        mid = _conv(mb, x, c(8, 3, 3, 8), c(8), "CONV_2D", shape, **same)
        y = mb.tensor("z", shape, F32)
        mb.op("PRELU", [mid, mb.const("alpha", round_consts(np.linspace(-0.3, 0.7, 8, dtype=F32) + 1e-3))], [y])
    elif case == "fc":
        y = _conv(mb, x, c(9, 40), c(9), "FULLY_CONNECTED", (2, 9))
    elif case == "fc-runtime":  # run-time weights are activations: float32 in fp16 plans too
        w = mb.input("w", (9, 40), F32)
        feeds.append(rng.standard_normal((9, 40)).astype(F32))
        y = mb.tensor("y", (2, 9), F32)
        mb.op("FULLY_CONNECTED", [x, w, mb.const("b", c(9))], [y])
    elif case == "transpose-conv":
        y = mb.tensor("y", (1, 8, 10, 6), F32)
        mb.op("TRANSPOSE_CONV", [mb.const("shape", np.array([1, 8, 10, 6], np.int32)), mb.const("w", c(6, 3, 3, 4)),
                                 x, mb.const("b", c(6))], [y], padding="SAME", stride_h=2, stride_w=2)
    elif case == "transpose-conv-bias":
        y = mb.tensor("y", (1, 9, 12, 3), F32)
        mb.custom_op("Convolution2DTransposeBias", [x, mb.const("w", c(3, 2, 2, 4)), mb.const("b", c(3))], [y],
                     custom_options=struct.pack("<iii", 1, 2, 2))
    elif case in ("add-const", "mul-broadcast", "prelu"):
        op, cshape = {"add-const": ("ADD", shape), "mul-broadcast": ("MUL", (6,)), "prelu": ("PRELU", (1, 1, 6))}[case]
        y = mb.tensor("y", shape, F32)
        mb.op(op, [x, mb.const("k", c(*cshape))], [y])
    elif case == "conv-beyond-f16":  # one weight float16 cannot hold: the node keeps f32 weights
        w = c(4, 3, 3, 4)
        w[1, 1, 1, 2] = 3 * F16_MAX
        y = _conv(mb, x, w, c(4), "CONV_2D", shape, **same)
    mb.output(y)
    return mb.build(), feeds


F16_MATH = ["conv-c4", "conv-c3", "depthwise-c4", "conv-prelu", "fc"]
F32_MATH = ["depthwise-mult2", "transpose-conv", "transpose-conv-bias", "add-const", "mul-broadcast", "prelu"]
CUSTOM = {"transpose-conv-bias"}  # LiteRT's Python interpreter runs it through XNNPACK


def _litert(model: bytes, feeds) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    return run(LiteRT(model_content=model), feeds)


def _fp16(model: bytes, feeds) -> tuple[list[np.ndarray], dict, Interpreter]:
    it = Interpreter(model_content=model, backend="webgpu", precision="fp16")
    out = run(it, feeds)
    plan = it.get_plan()
    gpu_only(plan)
    return out, plan, it


@pytest.mark.parametrize("case", F32_MATH)
def test_fp16_weights_are_float16_and_math_float32(case, loads):
    model, feeds = _model(case, lambda a: a)
    rounded, _ = _model(case, _f16)
    (out,), plan, it = _fp16(model, feeds)
    assert it.precision == "fp16" and plan["precision"] == "fp16" and "precision_note" not in plan
    assert plan["fp16"]["nodes"] == 1 and plan["fp16"]["kept_f32"] == [] and plan["fp16"]["loads"] == loads
    assert plan["fp16"]["f16_math_nodes"] == 0 and {p.math for p in _programs(it)} == {"f32"}
    (ref16,) = _litert(rounded, feeds)
    assert_same(out, ref16, rtol=RTOL, what=f"{case}: fp16 vs LiteRT on float16-rounded weights")
    (ref32,) = _litert(model, feeds)
    scale = max(1.0, float(np.abs(ref32).max()))
    assert np.abs(out.astype(np.float64) - ref32).max() > 10 * RTOL * scale, \
        f"{case}: the fp16 run equals the float32-weight run, so its weights were not rounded to float16"


@pytest.mark.parametrize("case", F16_MATH)
def test_fp16_products_are_float16(case, loads):
    model, feeds = _model(case, lambda a: a)
    rounded, _ = _model(case, _f16)
    (out,), plan, it = _fp16(model, feeds)
    assert plan["fp16"]["nodes"] == 1 and plan["fp16"]["f16_math_nodes"] == 1 and plan["fp16"]["loads"] == loads
    programs = _programs(it)
    assert any(p.math == "f16" and p.wgsl.startswith("enable f16;") for p in programs), [p.name for p in programs]
    (ref16,) = _litert(rounded, feeds)
    assert_same(out, ref16, rtol=F16_MATH_RTOL, what=f"{case}: f16 math vs LiteRT on float16-rounded weights")
    scale = max(1.0, float(np.abs(ref16).max()))
    assert np.abs(out.astype(np.float64) - ref16).max() > 10 * RTOL * scale, \
        f"{case}: the fp16 run equals float32 math on float16 weights, so its products were not float16"


def test_fp16_run_time_weights_stay_float32():
    model, feeds = _model("fc-runtime", lambda a: a)
    (out,), plan, it = _fp16(model, feeds)
    rounded_bias, _ = _model("fc-runtime", _f16)  # only the constant bias is rounded
    assert_same(out, _litert(rounded_bias, feeds)[0], rtol=RTOL)
    assert plan["fp16"]["nodes"] == 1 and plan["fp16"]["f16_math_nodes"] == 0
    assert {p.math for p in _programs(it)} == {"f32"}


def test_fp16_halves_the_weight_memory():
    model, feeds = _model("conv-c4", lambda a: a)
    _, plan16, _ = _fp16(model, feeds)
    it32 = Interpreter(model_content=model, backend="webgpu")
    run(it32, feeds)
    c16, c32 = plan16["constant_bytes"], it32.get_plan()["constant_bytes"]
    # weights [2 groups, 3, 3, 2, 4, 4] + bias 8: 2,336 bytes in f32, 1,168 in f16 (+ alignment)
    assert c32 == 4 * (2 * 9 * 2 * 16 + 8) and c16 == 2 * (2 * 9 * 2 * 16 + 8), (c16, c32)


def test_fp16_weight_beyond_float16_keeps_that_node_float32(caplog):
    model, feeds = _model("conv-beyond-f16", lambda a: a)
    with caplog.at_level(logging.WARNING, logger="gpulite"):
        (out,), plan, it = _fp16(model, feeds)
    assert not caplog.records, caplog.text
    assert it.precision == "fp16" and plan["fp16"]["nodes"] == 0 and plan["fp16"]["f16_math_nodes"] == 0
    (kept,) = plan["fp16"]["kept_f32"]
    assert kept["op"] == "CONV_2D" and "beyond float16" in kept["why"]
    assert_same(out, _litert(model, feeds)[0], rtol=RTOL)


def test_fp16_plan_says_what_fp16_means():
    model, feeds = _model("fc", lambda a: a)
    _, plan, _ = _fp16(model, feeds)
    meaning = plan["fp16"]["meaning"]
    assert "stored as float16" in meaning and "computed in float16" in meaning and "accumulated in float32" in meaning
    assert "activations stored and all other arithmetic done in float32" in meaning
    assert plan["precision_requested"] == "fp16"


def _programs(it: Interpreter) -> list:
    return [p for part in it._exe.parts if part.backend == "webgpu" for p in part.work]


def _keys(it: Interpreter) -> set[tuple]:
    return {p.key for p in _programs(it)}


def test_fp16_and_fp32_pipelines_are_distinct_and_cached(loads):
    """An fp16 program reads binding 3 as float16: it must never share the fp32 pipeline of
    the same kernel (nor the other f16 loader's), and a second fp16 interpreter compiles
    nothing new."""
    model, feeds = _model("conv-c4", lambda a: a)
    _, _, it16 = _fp16(model, feeds)
    it32 = Interpreter(model_content=model, backend="webgpu")
    run(it32, feeds)
    k16, k32 = _keys(it16), _keys(it32)
    assert {k[-1] for k in k16} == {loads} and {k[-1] for k in k32} == {"f32"} and not k16 & k32
    dev = get_device()
    wgsl = dev.pipelines[next(iter(k16))][0]
    assert k16 <= set(dev.pipelines) and "enable f16;" in wgsl  # f16 math, whichever loads
    assert ("unpack2x16float" in wgsl) == (loads == "f16-packed")
    n = len(dev.pipelines)
    _fp16(model, feeds)
    assert len(dev.pipelines) == n


def test_default_loads_follow_the_adapter(monkeypatch):
    """Packed loads on CPU adapters (measured faster on lavapipe), f16 loads on GPUs."""
    monkeypatch.delenv("GPULITE_F16_LOADS")
    model, feeds = _model("fc", lambda a: a)
    _, plan, it = _fp16(model, feeds)
    cpu = str(it._backend.gdev.adapter.info.get("adapter_type", "")).lower() == "cpu"
    assert plan["fp16"]["loads"] == ("f16-packed" if cpu else "f16")
    monkeypatch.setenv("GPULITE_F16_LOADS", "half")
    with pytest.raises(ValueError, match="GPULITE_F16_LOADS must be 'f16' or 'packed'"):
        Interpreter(model_content=model, backend="webgpu", precision="fp16").allocate_tensors()
