"""Issue 12's converter corpus (``tests/data/corpus/``, made by ``tools/make_corpus.py``) on the
WebGPU backend: the CNN and U-Net families in every variant (float32, float16, dynamic-range,
full int8 with float and with int8 I/O) run as one GPU partition with no crossing and match
LiteRT: float outputs within 1e-3 * max(1, max|ref|) (the issue's webgpu bound; dynamic-range
included, where LiteRT's hybrid kernels quantize activations and the GPU does not), quantized
outputs within two quantization steps (``quantized="float"``: docs/webgpu.md, "Quantized
models"; a float output of a DEQUANTIZE counts steps of the tensor it dequantizes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.model.opdefs import Op
from gpulite.model.reader import load
from tests.webgpu.support import gpu_only, require_adapter, run

require_adapter()

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
FAMILIES = ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_style", "resnet", "densenet", "unet")
VARIANTS = ("float32", "float16", "dynrange", "int8", "int8io")
FILES = [f"{f}_{v}" for f in FAMILIES for v in VARIANTS]


def _step(path: Path) -> float | None:
    """The scale of the quantized tensor the (float) model output is dequantized from, if any."""
    sg = load(path.read_bytes()).subgraphs[0]
    out = sg.outputs[0]
    for o in sg.operators:
        if o.op == Op.DEQUANTIZE and o.outputs[0] == out:
            q = sg.tensors[o.inputs[0]].quantization
            return float(q.scale[0]) if q is not None and q.scale.size else None
    return None


@pytest.mark.parametrize("name", FILES)
def test_corpus_model_is_one_gpu_partition(name: str) -> None:
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this checkout (issue 12's corpus)")
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    it = Interpreter(model_path=path, backend="webgpu")
    rng = np.random.default_rng(0)
    xs = []
    for d in it.get_input_details():
        if np.dtype(d["dtype"]) == np.int8:
            xs.append(rng.integers(-128, 128, d["shape"]).astype(np.int8))
        else:
            xs.append(rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]))
    got, want = run(it, xs)[0], run(LiteRT(model_path=str(path)), xs)[0]
    gpu_only(it.get_plan())
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = float(np.abs(got.astype(np.float64) - want).max())
    if want.dtype == np.int8:
        assert diff <= 2, f"{diff} steps"
    elif name.endswith("_int8"):
        step = _step(path)
        assert step is not None and diff <= 2 * step + 1e-7, (diff, step)
    else:
        assert diff <= 1e-3 * max(1.0, float(np.abs(want).max())), diff
