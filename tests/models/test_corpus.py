"""The converter-written corpus (``tests/data/corpus``, made by ``tools/make_corpus.py``) against LiteRT.

Thirteen small Keras models as TensorFlow's ``TFLiteConverter`` writes them, each in five
variants (``float32``, ``float16``, ``dynrange``, ``int8``: full-int8 with float I/O,
``int8io``: int8 I/O). LiteRT (default options, i.e. XNNPACK) is the oracle; no TensorFlow.

- cpu, batch 1 (and batch 2 through ``resize_tensor_input`` for ``BATCH2``): float outputs
  within ``1e-4 * max(1, max|ref|)``; outputs of quantized graphs (int8, or float from a final
  DEQUANTIZE) within one quantization step. Where LiteRT's own XNNPACK and builtin kernels
  (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) disagree by more than half that bound, within twice
  their disagreement, measured in the same run (:func:`tests.compare.assert_close_to_litert`).
  (Not ``BUILTIN_REF``: LiteRT 2.3's reference kernels abort the process on mobilenet_v2_int8.)
- webgpu, the float models (``float32``, ``float16``): within 1e-3 as above, and every node on
  the GPU (no CPU partition, no crossing; :mod:`tests.ops.harness`).
- every file: gpulite runs it, or refuses it at ``allocate_tensors`` with an
  ``UnsupportedOpError`` naming op, node and backend, never another error for a valid file.

Cases failing today are listed in ``KNOWN_GAPS`` with the error they give, and run as
``xfail(strict=True)``: a fix elsewhere makes the case pass, which fails the test until its
entry is removed.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ModelError, ShapeError, UnsupportedOpError
from tests.compare import assert_close_to_litert
from tests.ops.harness import NotOnGpuError, check_watched, watch_webgpu
from tests.ops.harness import _run as run_interpreter
from tests.webgpu.support import adapter_problem

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
NAMES = sorted(p.stem for p in CORPUS.glob("*.tflite"))
FLOAT_VARIANTS = ("float32", "float16")
VOCAB = 64  # transformer_tokens reads token ids in [0, VOCAB) (tools/make_corpus.py)
SEED = 0
RTOL = {"cpu": 1e-4, "webgpu": 1e-3}
BUILTIN = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"  # LiteRT's own kernels, to measure its spread against XNNPACK
BATCH2 = ("mobilenet_v3_small_float32", "transformer_tokens_float32", "audio_stft_float32", "unet_dynrange",
          "efficientnet_style_int8io")

# The files each check (test function below) runs.
CASES = {"cpu": NAMES, "cpu_batch2": BATCH2, "webgpu": [n for n in NAMES if n.endswith(FLOAT_VARIANTS)],
         "refusal": NAMES}

# (corpus file, check) -> the error it gives (a strict xfail: a fix makes it XPASS, and the entry goes).
# check: "cpu", "cpu_batch2", "webgpu", "refusal" (the test functions below, in that order).
ON_CPU_BY_DESIGN = ("NotOnGpuError: WHILE loops (Keras 3 GRUs) and TFLite_Detection_PostProcess "
                    "run on the CPU fallback by design (sequential steps; the values match, then the check fails)")

KNOWN_GAPS: dict[tuple[str, str], str] = {
    **{(f"{m}_{v}", "webgpu"): ON_CPU_BY_DESIGN for m in ("gru", "ssd_detector")
       for v in ("float32", "float16")},
}


# A listed case must fail with the error class its reason names: another failure is news.
RAISES = {"UnsupportedOpError": UnsupportedOpError, "ModelError": ModelError, "ShapeError": ShapeError,
          "NotOnGpuError": NotOnGpuError}


def cases(check: str, names: dict[str, list[str]], gaps: dict[tuple[str, str], str]) -> list:
    """The files of ``names[check]``, those in ``gaps`` as strict xfails raising the class their reason names."""
    def marks(reason: str):
        return pytest.mark.xfail(strict=True, raises=RAISES[reason.split(":", 1)[0]], reason=reason)
    return [pytest.param(n, marks=marks(gaps[n, check])) if (n, check) in gaps else n for n in names[check]]


def _cases(check: str) -> list:
    return cases(check, CASES, KNOWN_GAPS)


def runs_or_refuses(path: Path) -> None:
    """A file LiteRT runs either runs in gpulite or is refused by op, node and backend."""
    it = Interpreter(model_path=str(path), backend="cpu")
    try:
        it.allocate_tensors()
    except UnsupportedOpError as e:
        assert e.op and str(e.op) in str(e) and e.backend == "cpu" and e.node_index >= 0, (
            f"refusal without op/node/backend: {e}")
        return
    run_interpreter(it, make_inputs(path, 1))


def _litert(path: Path, resolver: str = "AUTO"):
    from ai_edge_litert.interpreter import Interpreter as LiteRtInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRtInterpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType[resolver])


def make_inputs(path: Path, batch: int, seed: int = SEED) -> list[np.ndarray]:
    """Seeded inputs in the model's input dtypes: floats uniform in [-1, 1]; int8 inputs that
    float sample quantized with the input's parameters; int32 token ids in [0, VOCAB)."""
    rng = np.random.default_rng(seed)
    out = []
    for d in _litert(path).get_input_details():
        shape = (batch, *d["shape"][1:])
        if d["dtype"] == np.int32:
            out.append(rng.integers(0, VOCAB, shape).astype(np.int32))
            continue
        x = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        if d["dtype"] == np.int8:
            scale, zero = d["quantization"]
            x = np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
        out.append(x)
    return out


def output_steps(path: Path) -> list[float | None]:
    """Per output, the quantization step its values come in: the output's own scale when it is
    integer, the input's scale when a DEQUANTIZE makes it; None for a float computed in float."""
    it = _litert(path, BUILTIN)
    tensors = {d["index"]: d for d in it.get_tensor_details()}
    producer = {int(o): op for op in it._get_ops_details() for o in op["outputs"]}
    steps: list[float | None] = []
    for d in it.get_output_details():
        op = producer.get(d["index"])
        if d["dtype"] != np.float32:
            steps.append(d["quantization"][0] or None)
        elif op is not None and op["op_name"] == "DEQUANTIZE" and tensors[int(op["inputs"][0])]["dtype"] == np.int8:
            steps.append(tensors[int(op["inputs"][0])]["quantization"][0])
        else:
            steps.append(None)
    return steps


def compare(name: str, backend: str, batch: int = 1, corpus: Path = CORPUS) -> None:
    """Run file ``name`` of ``corpus`` in LiteRT and in gpulite on ``backend``; assert the outputs match."""
    path = corpus / f"{name}.tflite"
    x = make_inputs(path, batch)
    want = run_interpreter(_litert(path), x)
    got = run_interpreter(Interpreter(model_path=str(path), backend=backend), x)
    reference: list[np.ndarray] = []

    def reference_output(k: int) -> np.ndarray:  # LiteRT's builtin kernels, run once when needed
        if not reference:
            reference.extend(run_interpreter(_litert(path, BUILTIN), x))
        return reference[k]

    assert len(got) == len(want), f"{name}: {len(got)} outputs, LiteRT gives {len(want)}"
    for k, (g, w, step) in enumerate(zip(got, want, output_steps(path), strict=True)):
        what = f"{name} on {backend}, batch {batch}, output {k}"
        other = partial(reference_output, k)
        if step is None:
            assert_close_to_litert(g, w, other, rtol=RTOL[backend], what=what)
        elif w.dtype.kind == "f":  # a DEQUANTIZE's output: compare in its quantization steps
            assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
            steps = partial(_in_steps, step=step)
            assert_close_to_litert(steps(g), steps(w), lambda other=other, steps=steps: steps(other()), int_tol=1,
                                   what=f"{what} (in steps of {step:g})")
        else:
            assert_close_to_litert(g, w, other, int_tol=1, what=what)


def _in_steps(x: np.ndarray, step: float) -> np.ndarray:
    return np.round(x.astype(np.float64) / step).astype(np.int64)


@pytest.mark.parametrize("name", _cases("cpu"))
def test_cpu_matches_litert(name):
    compare(name, "cpu")


@pytest.mark.parametrize("name", _cases("cpu_batch2"))
def test_cpu_batch2_matches_litert(name):
    compare(name, "cpu", batch=2)


@pytest.mark.parametrize("name", _cases("webgpu"))
def test_webgpu_matches_litert_on_the_gpu(name):
    if (why := adapter_problem()) is not None:
        pytest.skip(why)
    with watch_webgpu() as seen:
        compare(name, "webgpu")
    check_watched(seen)


@pytest.mark.parametrize("name", _cases("refusal"))
def test_runs_or_refuses_with_unsupported_op(name):
    runs_or_refuses(CORPUS / f"{name}.tflite")


def test_known_gaps_name_real_cases():
    """An entry for a renamed or removed file or check would never run, and so never XPASS."""
    stale = [key for key in KNOWN_GAPS if key[0] not in CASES.get(key[1], ())]
    assert not stale, f"KNOWN_GAPS entries that match no case: {stale}"


def test_corpus_is_complete():
    """Guards the parametrization: a lost file would silently drop its cases."""
    sums = (CORPUS / "SHA256SUMS").read_text().split("\n")
    assert sorted(line.split()[1][: -len(".tflite")] for line in sums if line) == NAMES
    assert len(NAMES) >= 50
