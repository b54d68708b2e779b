"""Structured fuzz with a differential check against LiteRT (issue 14).

Beside the byte mutator of tests/test_fuzz.py, this one mutates the *parsed* model: a small
model written with :class:`~gpulite.testing.tflite_writer.ModelBuilder` (or the zoo's
``hand_recrop``) is read into the official schema's object API (``ModelT``), one or two
fields are changed -- a tensor's shape or type, its buffer or quantization, an operator's
input/output indices, opcode or options values, an opcode's builtin code or version, the
graph's inputs/outputs -- and the model is packed again. Each case then runs the whole user
path on gpulite's cpu backend (load, ``allocate_tensors``, ``set_tensor`` of every input,
``invoke``, ``get_tensor`` of every output) and the same on LiteRT (ai-edge-litert, without its
default delegate).

A case passes when gpulite either raises a :class:`gpulite.GpuliteError` or returns outputs;
outputs must match LiteRT's (shape, dtype, values within the op suite's tolerance) unless
LiteRT refuses the file. Anything else -- another exception type, a crash, a hang, a case
doing far more work than the unmutated model (:class:`tests.worker_records.WorkBudget`:
function calls, not seconds) -- fails the test with the case's number;
``python -m tests.test_fuzz_structured --show SEED CASE``, in the repository's root, reruns
one case in-process.

Cases run in batches in worker subprocesses (this file as a script) under an address-space
limit. A worker that dies is restarted after the case it died in: a death after gpulite's
part of the case finished is LiteRT's crash on a malformed file (counted, allowed), a death
before it is gpulite's (a failure).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.worker_records import WorkBudget, WorkerHungError, over_budget, records

ROOT = Path(__file__).resolve().parents[1]
SEED = "gpulite-structured-fuzz-v1"
# Cases per seed model: 4,400 in all; the zoo model costs about ten times a small one.
CASES = {"convnet": 1500, "elementwise": 1500, "quantized": 1000, "hand_recrop": 400}
KINDS = ("shape", "dtype", "buffer", "quant", "op_io", "options", "opcode", "code", "graph_io")
HANG_SECONDS = 30.0
WORKER_MEMORY = 4 << 30
WORKERS = 2
RTOL, INT_TOL = 1e-4, 1


# -- the seed models ----------------------------------------------------------------------------
def _convnet() -> bytes:
    from gpulite.testing.tflite_writer import ModelBuilder

    r = np.random.default_rng(1)
    f = np.float32
    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 3), f)
    t1, t2, t3 = (mb.tensor(f"t{k}", (1, 8, 8, 4), f) for k in (1, 2, 3))
    mb.op("CONV_2D", [x, mb.const("w1", r.normal(size=(4, 3, 3, 3)).astype(f)), mb.const("b1", r.normal(size=4)
          .astype(f))], [t1], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU6")
    mb.op("DEPTHWISE_CONV_2D", [t1, mb.const("w2", r.normal(size=(1, 3, 3, 4)).astype(f)),
                                mb.const("b2", r.normal(size=4).astype(f))], [t2],
          padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1)
    mb.op("ADD", [t1, t2], [t3])
    t4 = mb.tensor("t4", (1, 4, 4, 4), f)
    mb.op("MAX_POOL_2D", [t3], [t4], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    t5 = mb.tensor("t5", (1, 64), f)
    mb.op("RESHAPE", [t4, mb.const("shape", np.array([1, 64], np.int32))], [t5])
    t6, y = mb.tensor("t6", (1, 10), f), mb.tensor("y", (1, 10), f)
    mb.op("FULLY_CONNECTED", [t5, mb.const("w3", r.normal(size=(10, 64)).astype(f)),
                              mb.const("b3", r.normal(size=10).astype(f))], [t6])
    mb.op("SOFTMAX", [t6], [y], beta=1.0)
    mb.output(y)
    return mb.build()


def _elementwise() -> bytes:
    from gpulite.testing.tflite_writer import ModelBuilder

    f, i32 = np.float32, np.int32
    mb = ModelBuilder()
    x, z = mb.input("x", (2, 3, 4), f), mb.input("z", (2, 3, 4), f)
    a, b, c, d = (mb.tensor(n, (2, 3, 4), f) for n in "abcd")
    mb.op("MUL", [x, mb.const("k", np.array([0.5, -1, 2, 3], f))], [a])
    mb.op("SUB", [a, z], [b], fused_activation_function="RELU")
    mb.op("LOGISTIC", [b], [c])
    mb.op("TANH", [x], [d])
    e = mb.tensor("e", (2, 3, 8), f)
    mb.op("CONCATENATION", [c, d], [e], axis=2)
    m = mb.tensor("m", (2, 1, 8), f)
    mb.op("MEAN", [e, mb.const("axes", np.array([1], i32))], [m], keep_dims=True)
    p = mb.tensor("p", (2, 3, 8), f)
    mb.op("PAD", [m, mb.const("pads", np.array([[0, 0], [1, 1], [0, 0]], i32))], [p])
    t = mb.tensor("t", (2, 8, 3), f)
    mb.op("TRANSPOSE", [p, mb.const("perm", np.array([0, 2, 1], i32))], [t])
    y = mb.tensor("y", (2, 4, 3), f)
    mb.op("STRIDED_SLICE", [t, mb.const("begin", np.array([0, 0, 0], i32)), mb.const("end", np.array([2, 8, 3], i32)),
                            mb.const("strides", np.array([1, 2, 1], i32))], [y])
    mb.output(y, m)
    return mb.build()


def _quantized() -> bytes:
    from gpulite.testing.tflite_writer import ModelBuilder

    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 2), np.float32)
    xq = mb.tensor("xq", (1, 4, 4, 2), np.int8, quant=(0.05, 3))
    mb.op("QUANTIZE", [x], [xq])
    s = mb.tensor("s", (1, 4, 4, 2), np.int8, quant=(0.08, -2))
    mb.op("ADD", [xq, mb.const("c", np.array([10, -20], np.int8), quant=(0.04, 0))], [s],
          fused_activation_function="RELU")
    r = mb.tensor("r", (1, 8, 8, 2), np.int8, quant=(0.08, -2))
    mb.op("RESIZE_NEAREST_NEIGHBOR", [s, mb.const("size", np.array([8, 8], np.int32))], [r])
    mb.output(r)  # int8, compared within one step as the op suite does
    return mb.build()


def _hand_recrop() -> bytes:
    from gpulite import zoo

    return zoo.resolve("hand_recrop").read_bytes()


SEEDS = {"convnet": _convnet, "elementwise": _elementwise, "quantized": _quantized, "hand_recrop": _hand_recrop}


# -- the mutator ----------------------------------------------------------------------------------
_INTS = [0, 1, 2, 3, -1, -2, 7, 8, 64, 127, 128, 255, 1 << 16, (1 << 31) - 1, -(1 << 31)]


def _int(rng: random.Random, orig: int) -> int:
    return rng.choice([*_INTS, orig + 1, orig - 1, orig * 2, rng.randrange(-300, 300)])


def _ints(values) -> list[int]:
    """A ModelT vector (None, a list or a numpy array) as a list of ints."""
    return [] if values is None else [int(v) for v in values]


def _dims(rng: random.Random, shape: list[int]) -> list[int]:
    s = list(shape)
    how = rng.randrange(5)
    if how == 0 and s:
        k = rng.randrange(len(s))
        s[k] = rng.choice([0, 1, s[k] + 1, max(s[k] - 1, 0), 2 * s[k], -1, (1 << 31) - 1, 1 << 20])
    elif how == 1 and s:
        s.pop(rng.randrange(len(s)))
    elif how == 2:
        s.insert(rng.randrange(len(s) + 1), rng.choice([1, 2, 3]))
    elif how == 3:
        s = []
    else:
        rng.shuffle(s)
    return s


def _index(rng: random.Random, n: int, orig: int) -> int:
    return rng.choice([-1, -2, n, n + 3, rng.randrange(n), rng.randrange(n), orig])


def _mutate(m, kind: str, rng: random.Random) -> None:
    """Apply one mutation of ``kind`` to ``m`` (a ``schema_py_generated.ModelT``) in place."""
    sgt = m.subgraphs[0]
    tensors, ops = sgt.tensors, sgt.operators
    n = len(tensors)
    if kind == "shape":
        t = rng.choice(tensors)
        t.shape = _dims(rng, _ints(t.shape))
    elif kind == "dtype":
        rng.choice(tensors).type = rng.choice([0, 0, 1, 2, 3, 4, 6, 7, 9, 10, 11, 15, 16, 17, 18, 19, 40])
    elif kind == "buffer":
        rng.choice(tensors).buffer = rng.choice([0, 0, rng.randrange(len(m.buffers)), len(m.buffers)])
    elif kind == "quant":
        from ai_edge_litert import schema_py_generated as schema

        t = rng.choice(tensors)
        if t.quantization is None or rng.random() < 0.3:
            t.quantization = schema.QuantizationParametersT()
        q = t.quantization
        k = rng.randrange(4)
        if k == 0:
            q.scale = [rng.choice([0.0, -1.0, 1e-30, 1e30, float("nan"), float("inf"), 0.1])]
        elif k == 1:
            q.zeroPoint = [rng.choice([0, 127, -128, 300, -(1 << 40)])]
        elif k == 2:
            q.scale, q.zeroPoint = [0.1, 0.2], [0, 0]
            q.quantizedDimension = rng.choice([0, 3, 7, -1])
        else:
            q.scale = None
    elif kind == "op_io":
        op = rng.choice(ops)
        which = "inputs" if rng.random() < 0.7 else "outputs"
        seq = _ints(getattr(op, which))
        how = rng.randrange(4)
        if how == 0 and seq:
            k = rng.randrange(len(seq))
            seq[k] = _index(rng, n, seq[k])
        elif how == 1 and seq:
            seq.pop(rng.randrange(len(seq)))
        elif how == 2:
            seq.insert(rng.randrange(len(seq) + 1), _index(rng, n, 0))
        else:
            seq = seq + seq[:1]
        setattr(op, which, seq)
    elif kind == "options":
        op = rng.choice([o for o in ops if o.builtinOptions is not None] or ops)
        opts = op.builtinOptions
        kinds = (int, float, list, np.ndarray)
        fields = [] if opts is None else [k for k, v in vars(opts).items() if isinstance(v, kinds)]
        if not fields or rng.random() < 0.15:
            op.builtinOptionsType = rng.randrange(0, 130)
        else:
            name = rng.choice(fields)
            v = getattr(opts, name)
            if isinstance(v, bool):
                setattr(opts, name, not v)
            elif isinstance(v, int):
                setattr(opts, name, max(-(1 << 31), min(_int(rng, v), (1 << 31) - 1)) if v > 255 or v < 0
                        else rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 100, 127]))
            elif isinstance(v, float):
                setattr(opts, name, rng.choice([0.0, -1.0, 1e30, float("nan"), float("inf"), v * 2]))
            else:
                setattr(opts, name, [_int(rng, 1) for _ in range(rng.randrange(4))])
    elif kind == "opcode":
        op = rng.choice(ops)
        op.opcodeIndex = rng.choice([rng.randrange(len(m.operatorCodes)), len(m.operatorCodes), 0])
    elif kind == "code":
        from gpulite.backends.kernels import get_kernels_for_backend
        from gpulite.model.opdefs import Op

        oc = rng.choice(m.operatorCodes)
        if rng.random() < 0.25:
            oc.version = rng.choice([0, 1, 2, 3, 7, 100, -1])
        else:
            known = sorted(op.spec.code for op in get_kernels_for_backend("cpu") if not op.is_custom)
            code = rng.choice(known) if rng.random() < 0.8 else rng.choice([Op.CUSTOM.spec.code, 160, 210, 250])
            oc.builtinCode, oc.deprecatedBuiltinCode = code, min(code, 127)
            if code == Op.CUSTOM.spec.code:
                oc.customCode = rng.choice([b"TransformLandmarks", b"Nope", b""])
    elif kind == "graph_io":
        which = rng.choice(["inputs", "outputs"])
        seq = _ints(getattr(sgt, which))
        if seq and rng.random() < 0.6:
            seq[rng.randrange(len(seq))] = _index(rng, n, seq[0])
        elif seq and rng.random() < 0.5:
            seq.pop()
        else:
            seq.append(_index(rng, n, 0))
        setattr(sgt, which, [v for v in seq if v >= 0] if which == "inputs" and rng.random() < 0.5 else seq)
    else:
        raise ValueError(kind)


def case_bytes(seed: str, case: int, data: bytes) -> tuple[str, bytes]:
    """The mutation kind and model bytes of one case (the same on every run)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    rng = random.Random(f"{SEED}:{seed}:{case}")
    kind = KINDS[case % len(KINDS)]
    for _ in range(20):  # a mutation the packer cannot write (a value out of its field's range) is redrawn
        m = schema.ModelT.InitFromPackedBuf(data, 0)
        _mutate(m, kind, rng)
        if rng.random() < 0.2:
            _mutate(m, rng.choice(KINDS), rng)
        try:
            b = flatbuffers.Builder(1024)
            b.Finish(m.Pack(b), file_identifier=b"TFL3")
        except Exception:  # struct.error, OverflowError...: draw another
            continue
        out = bytes(b.Output())
        if out != data:
            return kind, out
    raise AssertionError(f"{seed} case {case}: no packable mutation of kind {kind}")


# -- running one model both ways ------------------------------------------------------------------
def _inputs(details: list[dict], case: int) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(case)
    out = []
    for d in details:
        shape, dt = tuple(int(s) for s in d["shape"]), np.dtype(d["dtype"])
        if dt.kind == "f":
            v = rng.normal(size=shape).astype(dt)
        elif dt.kind == "b":
            v = rng.random(size=shape) < 0.5
        elif dt.kind in "iu":
            v = rng.integers(0, 5, size=shape).astype(dt)
        else:
            v = np.zeros(shape, dt)
        out.append((int(d["index"]), v))
    return out


def run_gpulite(data: bytes, case: int) -> list[np.ndarray]:
    from gpulite import Interpreter

    it = Interpreter(model_content=data, backend="cpu")
    it.allocate_tensors()
    for i, v in _inputs(it.get_input_details(), case):
        it.set_tensor(i, v)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def run_litert(data: bytes, case: int) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=data,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for i, v in _inputs(it.get_input_details(), case):
        it.set_tensor(i, v)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def compare(ours: list[np.ndarray], theirs: list[np.ndarray]) -> str:
    """"" when gpulite's outputs match LiteRT's, else what differs."""
    sys.path.insert(0, str(ROOT))
    from tests.compare import assert_same

    if len(ours) != len(theirs):
        return f"{len(ours)} outputs, LiteRT {len(theirs)}"
    try:
        for k, (a, e) in enumerate(zip(ours, theirs, strict=True)):
            assert_same(a, e, rtol=RTOL, int_tol=INT_TOL, what=f"output {k}")
    except AssertionError as e:
        return str(e)[:300]
    return ""


def check_gpulite(data: bytes, case: int) -> tuple[str, str, list[np.ndarray] | None]:
    """("ok", "", outputs), ("refused", error class, None), or ("crash", what, None)."""
    from gpulite import GpuliteError

    try:
        return "ok", "", run_gpulite(data, case)
    except GpuliteError as e:
        if not str(e):
            return "crash", f"{type(e).__name__} without a message", None
        return "refused", f"{type(e).__name__}: {e}"[:200], None
    except BaseException as e:  # the point is to report anything else
        return "crash", f"{type(e).__name__}: {e}"[:400], None


def check_litert(data: bytes, case: int) -> tuple[str, list[np.ndarray] | None]:
    """("", outputs), or (LiteRT's error, None) when it refuses the file."""
    try:
        return "", run_litert(data, case)
    except Exception as e:  # LiteRT refusing the file, in any way
        return f"{type(e).__name__}: {e}"[:200] or "refused", None


# -- the worker -------------------------------------------------------------------------------------
def _worker(seed: str, start: int, stop: int) -> None:
    import logging
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    logging.disable(logging.CRITICAL)
    data = SEEDS[seed]()
    ours = check_gpulite(data, 0)  # the unmutated model must agree with LiteRT; pays the imports too
    refused, theirs = check_litert(data, 0)
    if ours[0] != "ok" or refused or compare(ours[2], theirs):
        raise SystemExit(f"the unmutated {seed} model does not run alike: {ours[:2]}, LiteRT: {refused}")
    budget = WorkBudget(lambda: check_gpulite(data, 0))
    for case in range(start, stop):
        kind, mutated = case_bytes(seed, case, data)
        print(json.dumps({"start": case, "kind": kind}), flush=True)
        t0 = time.perf_counter()
        outcome, error, outs = check_gpulite(mutated, case)
        seconds = time.perf_counter() - t0
        calls = budget.calls(seconds, lambda m=mutated, c=case: check_gpulite(m, c))
        work = {"seconds": seconds, "calls": calls, "call_limit": budget.limit}
        print(json.dumps({"gpulite": case, "outcome": outcome, "error": error, **work}), flush=True)
        refused, theirs = check_litert(mutated, case)
        diff = compare(outs, theirs) if outcome == "ok" and not refused else ""
        print(json.dumps({"case": case, "kind": kind, "outcome": outcome, "error": error, **work,
                          "litert": "refused" if refused else "ok", "litert_error": refused, "diff": diff}),
              flush=True)


def _run_worker(seed: str, start: int, stop: int) -> list[dict]:
    """Records of cases [start, stop), restarting the worker after a case it died or hung in."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT),
               TF_CPP_MIN_LOG_LEVEL="3")
    results: list[dict] = []
    while start < stop:
        proc = subprocess.Popen([sys.executable, "-m", "tests.test_fuzz_structured", "--worker", seed, str(start),
                                 str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        assert proc.stderr is not None
        current, hung = None, False
        try:
            for rec in records(proc, HANG_SECONDS):
                if "start" in rec:
                    current = rec
                elif "gpulite" in rec:
                    current = {**current, **rec}
                else:
                    results.append(rec)
                    current = None
        except WorkerHungError:
            hung = True
        rc = proc.wait()
        err = proc.stderr.read().decode(errors="replace")[-1500:]
        if current is None:
            if rc != 0:
                raise AssertionError(f"{seed} worker failed outside a case (exit {rc}): {err}")
            break
        case = current["start"]
        if "gpulite" in current and not hung:  # gpulite finished the case; LiteRT took the process down
            results.append({"case": case, "kind": current["kind"], "outcome": current["outcome"],
                            "error": current["error"], "seconds": current["seconds"], "calls": current["calls"],
                            "call_limit": current["call_limit"], "litert": "crashed", "diff": ""})
        else:
            what = "hung" if hung else f"died (exit {rc}): {err}"
            results.append({"case": case, "kind": current["kind"], "outcome": "crash", "seconds": HANG_SECONDS,
                            "error": f"the worker {what} in gpulite's part", "litert": "?", "diff": ""})
        start = case + 1
    return results


def run_all(cases: dict[str, int]) -> list[dict]:
    jobs = [(seed, count * k // WORKERS, count * (k + 1) // WORKERS) for seed, count in cases.items()
            for k in range(WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        parts = list(pool.map(lambda j: [{**r, "seed": j[0]} for r in _run_worker(*j)], jobs))
    return [r for part in parts for r in part]


def summary(results: list[dict]) -> str:
    longest = max(results, key=lambda r: r["seconds"])
    both = Counter((r["outcome"], r["litert"]) for r in results)
    return (f"{len(results)} cases; (gpulite, LiteRT) outcomes {dict(both)}; longest: {longest['seed']} case "
            f"{longest['case']} [{longest['kind']}] {longest['seconds']:.3f} s")


@pytest.mark.slow
def test_structured_fuzz_against_litert():
    results = run_all(CASES)
    assert sorted((r["seed"], r["case"]) for r in results) == sorted(
        (s, c) for s, n in CASES.items() for c in range(n))
    how = f"(rerun one with: cd {ROOT} && python -m tests.test_fuzz_structured --show SEED CASE)"
    bad = [f"{r['seed']} case {r['case']} [{r['kind']}]: {r['error']}" for r in results if r["outcome"] == "crash"]
    assert not bad, f"{len(bad)} cases raised something other than a GpuliteError {how}:\n" + "\n".join(bad[:20])
    wrong = [f"{r['seed']} case {r['case']} [{r['kind']}]: {r['diff']}" for r in results if r["diff"]]
    assert not wrong, f"{len(wrong)} cases differ from LiteRT {how}:\n" + "\n".join(wrong[:20])
    heavy = over_budget(results)
    assert not heavy, f"cases doing far more work than the unmutated model {how}: {heavy[:20]}"
    # A fuzzer that never reaches the comparison, or never gets past the checks, tests little.
    pairs = Counter((r["outcome"], r["litert"]) for r in results)
    assert pairs[("ok", "ok")] >= 200, summary(results)
    assert pairs[("refused", "refused")] >= 200, summary(results)
    assert {r["kind"] for r in results} == set(KINDS)
    print(summary(results))


def test_structured_budget_is_at_least_2000_cases():
    assert sum(CASES.values()) >= 2000


def test_structured_mutations_are_deterministic_and_real():
    for seed, make in SEEDS.items():
        data = make()
        for case in range(len(KINDS)):
            k1, m1 = case_bytes(seed, case, data)
            assert (k1, m1) == case_bytes(seed, case, data)
            assert m1 != data


def _show(seed: str, case: int) -> None:
    data = SEEDS[seed]()
    kind, mutated = case_bytes(seed, case, data)
    print(f"{seed} case {case}: {kind}, {len(mutated)} bytes")
    try:
        outs = run_gpulite(mutated, case)
        print("gpulite:", [(o.shape, o.dtype) for o in outs])
    except BaseException:  # print whatever it was
        traceback.print_exc()
        outs = None
    refused, theirs = check_litert(mutated, case)
    print("LiteRT:", refused or [(o.shape, o.dtype) for o in theirs])
    if outs is not None and not refused:
        print("diff:", compare(outs, theirs) or "none")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if sys.argv[1] == "--worker":
        _worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "--show":
        _show(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "--all":
        res = run_all({k: int(v) for k, v in zip(CASES, sys.argv[2:], strict=False)} if sys.argv[2:] else CASES)
        print(summary(res))
        for r in res:
            if r["outcome"] == "crash" or r["diff"]:
                print("BUG", r["seed"], r["case"], r["kind"], r["error"] or r["diff"])
            elif os.environ.get("FUZZ_VERBOSE") and (r["outcome"] == "ok") != (r["litert"] == "ok"):
                print("ONLY", r["outcome"], r["seed"], r["case"], r["kind"], r["error"], r.get("litert_error"))
    else:
        raise SystemExit("usage: test_fuzz_structured.py --worker SEED START STOP | --show SEED CASE | --all [N N N]")
