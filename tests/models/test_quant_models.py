"""Converter-written quantized models (``tests/data/quant``, made by ``tools/make_quant_models.py``)
against LiteRT with default options, end to end on the cpu backend.

Each of three small Keras models (a conv net, an MLP, a MobileNetV3-like block with
hard-swish and squeeze-excite) as TensorFlow's converter writes it dynamic-range (hybrid),
float16-weight, full-int8 with float, int8 and uint8 I/O (and the conv net and MLP in
the 16x8 mode: int16 activations, int8 weights). Tolerances are the
issue's: float outputs within ``1e-4 * max(1, max|ref|)`` or twice the disagreement between
LiteRT's default and reference kernels measured in the same run; quantized outputs within
one quantization step (gpulite's int8 conv rescales as TFLite's reference kernels do, one
code away from XNNPACK's here and there, which can move an output by a step).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from gpulite import Interpreter
from tests.ops.harness import run_litert
from tests.ops.quant_ref import run_litert_reference

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "quant"
MODELS = sorted(p.name for p in DATA.glob("*.tflite"))


def _inputs(model: bytes) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    rng = np.random.default_rng(7)
    out = []
    for d in LiteRT(model_content=model).get_input_details():
        if d["dtype"] == np.float32:
            out.append(rng.normal(0, 1, d["shape"]).astype(np.float32))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
    return out


def _output_steps(model: bytes) -> list[float]:
    """One quantization step of each output: its own scale, or that of the tensor a final
    DEQUANTIZE reads; 0 for a float output computed in float."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    it = LiteRT(model_content=model)
    details = {t["index"]: t for t in it.get_tensor_details()}
    producer = {o: op for op in it._get_ops_details() for o in op["outputs"]}
    steps = []
    for d in it.get_output_details():
        t = details[d["index"]]
        op = producer.get(d["index"])
        if not t["quantization_parameters"]["scales"].size and op is not None and op["op_name"] == "DEQUANTIZE":
            t = details[op["inputs"][0]]
        scales = t["quantization_parameters"]["scales"]
        steps.append(float(scales[0]) if scales.size else 0.0)
    return steps


@pytest.mark.parametrize("name", MODELS)
def test_quantized_model_matches_litert(name: str) -> None:
    model = (DATA / name).read_bytes()
    xs = _inputs(model)
    default, reference = run_litert(model, xs), run_litert_reference(model, xs)
    it = Interpreter(model_content=model, backend="cpu")
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    got = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    for i, (g, e, r, step) in enumerate(zip(got, default, reference, _output_steps(model), strict=True)):
        assert g.shape == e.shape and g.dtype == e.dtype, f"output {i}: {g.shape} {g.dtype} vs {e.shape} {e.dtype}"
        assert len(np.unique(e)) > 4, f"degenerate case: output {i} of {name} is {np.unique(e)}"
        diff = np.abs(g.astype(np.float64) - e.astype(np.float64)).max()
        if e.dtype == np.float32 and step == 0.0:
            disagreement = np.abs(e.astype(np.float64) - r).max()
            bound = max(1e-4 * max(1.0, float(np.abs(e).max())), 2 * disagreement)
        else:
            bound = 1.0 if e.dtype != np.float32 else step * (1 + 1e-6)
        assert diff <= bound, f"{name} output {i}: max |diff| {diff} > {bound}"
