"""Every full-integer model of both converter corpora on webgpu with ``quantized="exact"``
(issue 23, item 4): bit-equal to LiteRT, and on the GPU.

The files: ``tests/data/corpus`` ``*_int8`` (float I/O) and ``*_int8io``; ``tests/data/corpus_exporters``
``*_int8``, ``*_int8io``, ``*_pt2e_int8`` and ``*_a16w8`` (int16 activations); not the dynamic-range
ones (float activations). On three seeded inputs each (:data:`SEEDS`, the corpus tests'
:func:`tests.models.test_corpus.make_inputs`; seed 0 is theirs), each in fresh interpreters (a
recurrent model's state would carry over from one invoke to the next):

- **values**: every output equal, bit for bit, to LiteRT's. LiteRT has two kernel sets that
  disagree on some int8 ops (XNNPACK, its default, and its builtin kernels,
  ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``); the outputs must equal all of one of them.
- **the CPU's integers**: where the model computes in integers only (float32 tensors only moved,
  or made by DEQUANTIZE, or a unary op reading a DEQUANTIZE's codes, which the GPU looks up in
  a table of the cpu kernels' values: kernels/dequantized_table.py), every output equal to the
  cpu backend's, whose kernels the GPU's port:
  a GPU kernel's slip on a real model fails the test even where the case is a known gap
  (:class:`GpuNotCpuError` is no xfail's). PT2E exports keep float arithmetic between their
  integer ops (litert-torch's LSTM is mostly float), which the GPU and the CPU round apart.
- **placement**: every node on the GPU, except the ops the project runs on the CPU by design
  (:data:`ON_CPU_BY_DESIGN`: data-dependent shapes and sequential loops, as ``gpulite ops`` and
  docs/ops.md list them, and TFLite_Detection_PostProcess, a non-max suppression). So the GPU
  nodes form one partition, cut only where such an op sits.

A model not there yet is a strict xfail in :data:`KNOWN_GAPS` (per file and seed), with what it
runs on the CPU (or how its values differ): a kernel landing makes it XPASS, which fails until
the entry goes.
``tests/webgpu/test_quantized.py`` covers the default ``quantized="float"`` path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends.coverage import _CPU_BY_DESIGN
from gpulite.backends.webgpu.kernels.dequantized_table import OPS as TABLE_OPS
from gpulite.errors import UnsupportedOpError
from tests.models.test_corpus import BUILTIN, _litert, make_inputs
from tests.ops.harness import NotOnGpuError
from tests.ops.harness import _run as run
from tests.webgpu.support import require_adapter

require_adapter()

DATA = Path(__file__).resolve().parent.parent / "data"
CORPORA = ("corpus", "corpus_exporters")
INTEGER_VARIANTS = ("_int8", "_int8io", "_pt2e_int8", "_a16w8")
FILES = sorted(f"{p.parent.name}/{p.stem}" for c in CORPORA for p in (DATA / c).glob("*.tflite")
               if p.stem.endswith(INTEGER_VARIANTS))
ON_CPU_BY_DESIGN = frozenset({op.value for op in _CPU_BY_DESIGN} | {"TFLite_Detection_PostProcess"})


class NotBitEqualError(AssertionError):
    """An output differs from both of LiteRT's kernel sets."""


class GpuNotCpuError(AssertionError):
    """An output of an integer-only model differs from the cpu backend's: a GPU kernel's bug."""


# Float32 ops that move values or make them exactly (DEQUANTIZE): a model with no other float
# node computes in integers only, so the GPU must give the cpu backend's outputs bit for bit.
EXACT_FLOAT_OPS = frozenset({"DEQUANTIZE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "CONCATENATION", "SLICE",
                             "STRIDED_SLICE", "GATHER", "GATHER_ND", "PACK", "UNPACK", "SPLIT", "PAD", "NEG"})


SEEDS = (0, 1, 2)

# (corpus/file, seed) -> why it fails today (the error class first): strict xfails.
KNOWN_GAPS: dict[tuple[str, int], str] = {}

RAISES = {"NotOnGpuError": NotOnGpuError, "NotBitEqualError": NotBitEqualError,
          "UnsupportedOpError": UnsupportedOpError}


def _cases() -> list:
    def marks(reason: str):
        return pytest.mark.xfail(strict=True, raises=RAISES[reason.split(":", 1)[0]], reason=reason)
    return [pytest.param(f, s, marks=marks(KNOWN_GAPS[f, s])) if (f, s) in KNOWN_GAPS else pytest.param(f, s)
            for f in FILES for s in SEEDS]


def cpu_ops(it: Interpreter) -> dict[str, int]:
    """The op types an allocated webgpu interpreter runs on the CPU fallback, with counts,
    less :data:`ON_CPU_BY_DESIGN`."""
    ops: dict[str, int] = {}
    for p in it.get_plan()["partitions"]:
        if p["backend"] != "webgpu":
            for op, n in p["ops"].items():
                if op not in ON_CPU_BY_DESIGN:
                    ops[op] = ops.get(op, 0) + n
    return dict(sorted(ops.items()))


def integer_only(it: Interpreter) -> bool:
    """Whether the model's float32 nodes only move values or dequantize (:data:`EXACT_FLOAT_OPS`;
    the ops on the CPU by design run the cpu kernels in both), or are unary ops reading a
    DEQUANTIZE's output (the GPU's table of the cpu kernels' values)."""
    g = it.graph
    dequantized = {o for n in g.nodes if n.op == "DEQUANTIZE" for o in n.outputs}
    return all(str(n.op) in EXACT_FLOAT_OPS | ON_CPU_BY_DESIGN
               or (n.op in TABLE_OPS and n.inputs[0] in dequantized)
               or all(g.tensors[o].dtype != np.float32 for o in n.outputs if o >= 0)
               for n in g.nodes)


def value_problem(got: list[np.ndarray], oracles: dict[str, list[np.ndarray]]) -> str | None:
    """None when ``got`` equals all outputs of one of ``oracles`` (name -> outputs), else how it differs."""
    def same(g: np.ndarray, w: np.ndarray) -> bool:
        return g.dtype == w.dtype and g.shape == w.shape and bool(np.array_equal(g, w))

    if any(all(map(same, got, want)) for want in oracles.values()):
        return None
    lines = []
    for name, want in oracles.items():
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            if g.dtype != w.dtype or g.shape != w.shape:
                lines.append(f"output {k}: {g.dtype}{g.shape}, LiteRT {name} {w.dtype}{w.shape}")
            elif not np.array_equal(g, w):
                d = np.abs(g.astype(np.float64) - w.astype(np.float64))
                lines.append(f"output {k}: {int((d > 0).sum())} of {d.size} differ from LiteRT {name}, "
                             f"max {d.max():g}")
    return "; ".join(lines)


@pytest.mark.parametrize(("name", "seed"), _cases())
def test_full_integer_model_is_exact_on_the_gpu(name: str, seed: int) -> None:
    path = DATA / f"{name}.tflite"
    x = make_inputs(path, 1, seed)
    it = Interpreter(model_path=str(path), backend="webgpu", quantized="exact")
    got = run(it, x)
    oracles = {"XNNPACK": run(_litert(path), x), "builtin": run(_litert(path, BUILTIN), x)}
    assert len(got) == len(oracles["XNNPACK"]), f"{len(got)} outputs, LiteRT gives {len(oracles['XNNPACK'])}"
    if integer_only(it):
        cpu = run(Interpreter(model_path=str(path), backend="cpu"), x)
        slips = [k for k, (g, c) in enumerate(zip(got, cpu, strict=True)) if not np.array_equal(g, c)]
        if slips:
            raise GpuNotCpuError(f"{name}, seed {seed}: outputs {slips} differ from the cpu backend's")
    values = value_problem(got, oracles)
    plan = it.get_plan()
    on_cpu = cpu_ops(it)
    if on_cpu or plan.get("cpu_after_invoke"):
        raise NotOnGpuError(f"{name}: runs {' '.join(on_cpu)} on the CPU "
                            f"(cpu_after_invoke: {plan.get('cpu_after_invoke')}); values: {values or 'bit-equal'}")
    # GPU partitions are cut only by the CPU ones (by design): at most one more of them
    parts = [p["backend"] for p in plan["partitions"]]
    assert parts.count("webgpu") <= len(parts) - parts.count("webgpu") + 1, f"{name}: {plan['partitions']}"
    if values is not None:
        raise NotBitEqualError(f"{name}, seed {seed}: {values}")


def test_every_full_integer_file_is_listed_once() -> None:
    """Guards the file list against a rename (a lost file would silently drop its case) and
    KNOWN_GAPS against stale entries."""
    assert len(FILES) >= 39, FILES
    stale = sorted(k for k in KNOWN_GAPS if k[0] not in FILES or k[1] not in SEEDS)
    assert not stale, f"KNOWN_GAPS entries naming no file: {stale}"
