"""How far the WebGPU backend's two ways of running a full-integer model land from LiteRT and
from the float model, per full-integer file of both converter corpora (issue 23, item 4)::

    python benchmarks/quantized_error.py                 # every file, a markdown table
    python benchmarks/quantized_error.py resnet unet     # the files whose name contains a word

For each file (``tests/data/corpus`` ``*_int8``, ``*_int8io``; ``tests/data/corpus_exporters``
``*_int8``, ``*_int8io``, ``*_pt2e_int8``, ``*_a16w8``) on ``--seeds`` seeded inputs (uniform in
[-1, 1], quantized with the input's parameters for integer inputs; token ids in [0, 64)),
webgpu with ``quantized="float"`` and with ``quantized="exact"`` against:

- **LiteRT**: the same file in LiteRT (default options: XNNPACK). For ``exact``, the nearer of
  LiteRT's two kernel sets (XNNPACK and its builtin kernels, which disagree on some int8 ops).
- **float32**: the model's float32 sibling in the same directory (same weights before
  quantization, the same real input: integer inputs dequantized), run in LiteRT; for
  ``onnx_decoder`` (onnx2tf's float32 file is not runnable, see ``SKIPPED``) the litert-torch
  export of the same module, in NCHW (inputs and outputs transposed).

Errors are ``max|got - ref|`` over the real values of each output (integer outputs
dequantized), worst output and input of the file, in quantization steps of the output
(``steps``: the output's scale, or that of the tensor a final DEQUANTIZE reads) and as a
fraction of the output's range (``% range``: its integer grid's, 255 steps for int8 and 65,535
for int16; for an output with no grid, a custom op's float outputs, the reference's spread on
the input, at least 1, and no steps). ``exact`` against float32 is LiteRT's own quantization
error where ``exact`` is bit-equal to LiteRT. ``exact placement``: ``gpu`` when ``exact`` runs
every node on the GPU (but ops on the CPU by design, as tests/webgpu/test_exact_int8_models.py),
else the op types still on the CPU fallback. ``--time RUNS`` adds ``exact / float time``: the
median invoke time of ``exact`` over ``float``'s, the two interpreters alternating run by run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from gpulite import Interpreter
from gpulite.backends.coverage import _CPU_BY_DESIGN
from gpulite.model.opdefs import Op
from gpulite.model.reader import load

ROOT = Path(__file__).resolve().parents[1] / "tests" / "data"
CORPORA = ("corpus", "corpus_exporters")
INTEGER_VARIANTS = ("_int8", "_int8io", "_pt2e_int8", "_a16w8")
VOCAB = 64  # token ids of transformer_tokens (tools/make_corpus.py)
ON_CPU_BY_DESIGN = frozenset({op.value for op in _CPU_BY_DESIGN} | {"TFLite_Detection_PostProcess"})


def files(words: list[str]) -> list[Path]:
    out = sorted(p for c in CORPORA for p in (ROOT / c).glob("*.tflite") if p.stem.endswith(INTEGER_VARIANTS))
    return [p for p in out if not words or any(w in p.stem for w in words)]


def float_sibling(path: Path) -> tuple[Path, bool] | None:
    """The float32 file of the same model and whether it is the NCHW litert-torch export
    standing in for an onnx2tf file, or None."""
    stem = path.stem
    for v in INTEGER_VARIANTS:
        if stem.endswith(v):
            model = stem[: -len(v)].removesuffix("_pt2e")
            break
    same = path.parent / f"{model}_float32.tflite"
    if same.exists():
        return same, False
    torch = path.parent / f"{model.replace('onnx_', 'torch_', 1)}_float32.tflite"
    return (torch, True) if model.startswith("onnx_") and torch.exists() else None


def litert(path: Path, xs: list[np.ndarray], resolver: str = "AUTO") -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    return run(LiteRT(model_path=str(path), experimental_op_resolver_type=OpResolverType[resolver]), xs)


def run(it, xs: list[np.ndarray]) -> list[np.ndarray]:
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"]), copy=True) for d in it.get_output_details()]


def inputs(it, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Seeded inputs for interpreter ``it`` and their real values (float32)."""
    rng = np.random.default_rng(seed)
    xs, reals = [], []
    for d in it.get_input_details():
        if d["dtype"] == np.int32:
            x = rng.integers(0, VOCAB, d["shape"]).astype(np.int32)
            xs.append(x)
            reals.append(x)
            continue
        x = rng.uniform(-1.0, 1.0, d["shape"]).astype(np.float32)
        if np.dtype(d["dtype"]).kind == "i":
            scale, zero = d["quantization"]
            info = np.iinfo(d["dtype"])
            x = np.clip(np.round(x / scale) + zero, info.min, info.max).astype(d["dtype"])
            xs.append(x)
            reals.append(((x.astype(np.float64) - zero) * scale).astype(np.float32))
        else:
            xs.append(x)
            reals.append(x)
    return xs, reals


def output_grid(path: Path) -> list[tuple[float, int, int] | None]:
    """Per output, the (scale, zero point, bits) of the integer tensor it is or that a final
    DEQUANTIZE reads; None for a float computed in float."""
    sg = load(path.read_bytes()).subgraphs[0]
    producer = {o: op for op in sg.operators for o in op.outputs}
    grids: list[tuple[float, int, int] | None] = []
    for t in sg.outputs:
        src = t
        op = producer.get(t)
        if sg.tensors[t].dtype.kind == "f" and op is not None and op.op == Op.DEQUANTIZE:
            src = op.inputs[0]
        q = sg.tensors[src].quantization
        ok = sg.tensors[src].dtype.kind in "iu" and q is not None and np.size(q.scale)
        bits = 8 * sg.tensors[src].dtype.itemsize
        grids.append((float(q.scale[0]), int(q.zero_point[0]), bits) if ok else None)
    return grids


def real(x: np.ndarray, grid: tuple[float, int, int] | None) -> np.ndarray:
    if x.dtype.kind in "iu" and grid is not None:
        return (x.astype(np.float64) - grid[1]) * grid[0]
    return x.astype(np.float64)


def error(got: list[np.ndarray], ref: list[np.ndarray], grids: list) -> tuple[float | None, float]:
    """(max error in steps, max error / output range) over the outputs; steps None when no
    output has a step."""
    steps: float | None = None
    frac = 0.0
    for g, r, grid in zip(got, ref, grids, strict=True):
        gr, rr = real(g, grid), real(r, grid) if r.dtype.kind in "iu" else r.astype(np.float64)
        if gr.shape != rr.shape:
            raise ValueError(f"output shapes differ: {gr.shape} and {rr.shape}")
        d = float(np.abs(gr - rr).max()) if gr.size else 0.0
        frac = max(frac, d / output_range(grid, rr))
        if grid is not None:
            steps = max(steps or 0.0, d / grid[0])
    return steps, frac


def output_range(grid: tuple[float, int, int] | None, ref: np.ndarray) -> float:
    """The range an output can take: its integer grid's (255 steps for int8), else the
    reference's values on this input (at least 1)."""
    if grid is not None:
        return (2 ** grid[2] - 1) * grid[0]
    return max(float(ref.max() - ref.min()) if ref.size else 0.0, 1.0)


def float_reference(path: Path, reals: list[np.ndarray]) -> list[np.ndarray] | None:
    sibling = float_sibling(path)
    if sibling is None:
        return None
    f32, nchw = sibling
    if nchw:
        xs = [np.ascontiguousarray(r.transpose(0, 3, 1, 2)) if r.ndim == 4 else r for r in reals]
        return [o.transpose(0, 2, 3, 1) if o.ndim == 4 else o for o in litert(f32, xs)]
    return litert(f32, reals)


def cpu_ops(it: Interpreter) -> list[str]:
    return sorted({op for p in it.get_plan()["partitions"] if p["backend"] != "webgpu" for op in p["ops"]}
                  - ON_CPU_BY_DESIGN)


def _worst(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or b is None:
        return a or b
    return (None if a[0] is None else max(a[0], b[0] or 0.0)), max(a[1], b[1])


def measure(path: Path, seeds: int, runs: int = 0) -> dict:
    """The table row of ``path``: the worst errors over inputs of seeds ``0 .. seeds - 1``; with
    ``runs``, the median invoke time of ``exact`` over that of ``float`` (runs alternating)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    grids = output_grid(path)
    row: dict = {"file": f"{path.parent.name}/{path.stem}"}
    its = {mode: Interpreter(model_path=str(path), backend="webgpu", quantized=mode) for mode in ("float", "exact")}
    for seed in range(seeds):
        xs, reals = inputs(LiteRT(model_path=str(path)), seed)
        want = litert(path, xs)
        builtin = litert(path, xs, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
        f32 = float_reference(path, reals)
        for mode, it in its.items():
            try:
                got = run(it, xs)
            except Exception as e:  # a refusal is a row of the table
                row[mode] = f"{type(e).__name__}"
                continue
            vs = error(got, want, grids)
            if mode == "exact":
                vs = min(vs, error(got, builtin, grids), key=lambda e: (e[1], e[0] or 0.0))
                row["placement"] = " ".join(cpu_ops(it)) or "gpu"
            vs32 = error(got, f32, grids) if f32 is not None else None
            old = row.get(mode, (None, None))
            row[mode] = (_worst(old[0], vs), _worst(old[1], vs32))
    if runs and not any(isinstance(row[m], str) for m in its):
        times: dict[str, list[float]] = {m: [] for m in its}
        for _ in range(runs + 1):  # the first round warms up
            for mode, it in its.items():
                t = time.perf_counter()
                it.invoke()
                times[mode].append(time.perf_counter() - t)
        row["time"] = statistics.median(times["exact"][1:]) / statistics.median(times["float"][1:])
    return row


def _steps(e: tuple[float | None, float] | None) -> str:
    return "-" if e is None or e[0] is None else f"{e[0]:.3g}"


def _pct(e: tuple[float | None, float] | None) -> str:
    return "-" if e is None else f"{100 * e[1]:.2g}%"


def table(rows: list[dict]) -> str:
    head = ("| file | float vs LiteRT: steps | % range | float vs float32: steps | % range | "
            "exact vs LiteRT: steps | % range | exact vs float32: steps | % range | exact placement |")
    if any("time" in r for r in rows):
        head += " exact / float time |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [r["file"]]
        for mode in ("float", "exact"):
            m = r[mode]
            if isinstance(m, str):
                cells += [m] * 4
                continue
            vs, f32 = m
            cells += [_steps(vs), _pct(vs), _steps(f32), _pct(f32)]
        cells.append(r.get("placement", "-"))
        if "time" in r:
            cells.append(f"{r['time']:.2g}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("words", nargs="*", help="only the files whose name contains one of these")
    ap.add_argument("--seeds", type=int, default=3, help="inputs per file (seeds 0, 1, ...; default 3)")
    ap.add_argument("--time", type=int, default=0, metavar="RUNS",
                    help="also time RUNS invokes of each mode, alternating: exact's median over float's")
    args = ap.parse_args(argv)
    rows = []
    for path in files(args.words):
        rows.append(measure(path, args.seeds, args.time))
        print(f"measured {rows[-1]['file']}", file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
