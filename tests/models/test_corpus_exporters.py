"""The exporter-written corpus (``tests/data/corpus_exporters``, made by ``tools/make_exporter_corpus.py``)
against LiteRT: issue 12's checks (:mod:`tests.models.test_corpus`) on what PyTorch users bring.

- ``torch_<model>_<variant>``: small PyTorch modules (torchvision's MobileNetV3-Small, ResNet-18
  layout, ShuffleNetV2, LR-ASPP, ViT; a ResNeXt with grouped convs; a conv-transpose/upsampling
  decoder; LSTM, bidirectional GRU; where/gather/cumsum/topk/einsum/layer norm; two inputs and
  two outputs) exported by litert-torch: ``float32``, ``fp16`` (float16 weights), ``dynint8``
  (dynamic-range), ``pt2e_int8`` (PT2E static int8, int8 I/O).
- ``onnx_<model>_<variant>``: some of them exported to ONNX and converted by onnx2tf:
  ``float32``, ``float16``, ``dynrange``, ``int8`` (float I/O), ``int8io``.

Same tolerances as issue 12's corpus: cpu within ``1e-4 * max(1, max|ref|)`` for float outputs, one
quantization step for quantized ones (or twice LiteRT's own XNNPACK-vs-builtin disagreement);
webgpu, float files (``float32``, ``fp16``, ``float16``), within 1e-3 and wholly on the GPU;
every file runs or is refused at ``allocate_tensors`` with ``UnsupportedOpError``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models.test_corpus import cases, compare, runs_or_refuses
from tests.ops.harness import check_watched, watch_webgpu
from tests.webgpu.support import adapter_problem

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus_exporters"
NAMES = sorted(p.stem for p in CORPUS.glob("*.tflite"))
FLOAT_VARIANTS = ("float32", "fp16", "float16")

CASES = {"cpu": NAMES, "webgpu": [n for n in NAMES if n.endswith(FLOAT_VARIANTS)], "refusal": NAMES}

# (corpus file, check) -> the error it gives today, run as a strict xfail (see tests/models/test_corpus.py).
KNOWN_GAPS: dict[tuple[str, str], str] = {}


def _cases(check: str) -> list:
    return cases(check, CASES, KNOWN_GAPS)


@pytest.mark.parametrize("name", _cases("cpu"))
def test_cpu_matches_litert(name):
    compare(name, "cpu", corpus=CORPUS)


@pytest.mark.parametrize("name", _cases("webgpu"))
def test_webgpu_matches_litert_on_the_gpu(name):
    if (why := adapter_problem()) is not None:
        pytest.skip(why)
    with watch_webgpu() as seen:
        compare(name, "webgpu", corpus=CORPUS)
    check_watched(seen)


@pytest.mark.parametrize("name", _cases("refusal"))
def test_runs_or_refuses_with_unsupported_op(name):
    runs_or_refuses(CORPUS / f"{name}.tflite")


def test_known_gaps_name_real_cases():
    stale = [key for key in KNOWN_GAPS if key[0] not in CASES.get(key[1], ())]
    assert not stale, f"KNOWN_GAPS entries that match no case: {stale}"


def test_corpus_is_complete():
    """Guards the parametrization: a lost file would silently drop its cases."""
    sums = (CORPUS / "SHA256SUMS").read_text().split("\n")
    assert sorted(line.split()[1][: -len(".tflite")] for line in sums if line) == NAMES
    assert len(NAMES) >= 40
