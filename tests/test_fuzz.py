"""Fuzz the model reader and the load-time graph passes with mutated real models.

Every case takes one of the fourteen zoo models, mutates it (truncation, random bytes or
bits, or a targeted hit on the FlatBuffer structure: uoffsets, table-to-vtable soffsets,
vtable entries, vector lengths, index/shape scalars, and the offset/size fields of
buffers stored after the FlatBuffer), and then requires that reading it either works or
raises :class:`gpulite.ModelError` -- never IndexError, struct.error, a numpy error,
MemoryError, RecursionError, a crash, a hang, or far more work than the unmutated model
(:class:`tests.worker_records.WorkBudget`: function calls, not seconds). "Reading" is
``gpulite.model.reader.load`` plus ``Interpreter(model_content=...)`` (graph build,
constant folding, densify, fusion, topological order) plus the ``get_*_details`` calls.

Cases run in worker subprocesses (this file run as a script, ``--worker``) so that a
segfault or an endless loop is reported with the case that caused it instead of taking
the test run down. Each worker works under an address-space limit so a corrupted size
turns into a prompt MemoryError (a failure here) rather than a swapping machine. Every
mutation is derived from a string seed, so a failing case reproduces exactly:
``python -m tests.test_fuzz --show MODEL VARIANT CASE``, run in the repository's root, reruns
one case in-process and shows its traceback.

Small models get more cases than big ones (a case costs about two model loads); the
total is about 3,000 (at least 2,000 is required).
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.worker_records import WorkBudget, WorkerHungError, over_budget, records

ROOT = Path(__file__).resolve().parents[1]
SEED = "gpulite-fuzz-v1"
HANG_SECONDS = 30.0  # a worker silent this long is hung (generous: CI machines stall)
WORKER_MEMORY = 4 << 30  # RLIMIT_AS of a worker process
WORKERS = 2
MIN_CHECKS = 15  # distinct reader/pass checks each model's mutations must trip

# Cases per model: about 3,000 in all, weighted towards the small (cheap) models.
CASES = {
    "hand_recrop": 400,
    "face_detection_short_range": 400,
    "selfie_segmentation": 300,
    "selfie_segmentation_landscape": 160,
    "face_detection_full_range_sparse": 320,
    "face_landmark": 200,
    "iris_landmark": 120,
    "palm_detection_lite": 120,
    "hand_landmark_lite": 100,
    "palm_detection_full": 100,
    "pose_detection": 100,
    "face_landmark_with_attention": 80,
    "hand_landmark_full": 60,
    "pose_landmark_full": 60,
}
# The same models rewritten with every buffer stored after the FlatBuffer by offset/size
# (the layout LiteRT uses for models over 2 GB), so those fields can be corrupted too.
OFFSET_CASES = {"hand_recrop": 240, "face_detection_full_range_sparse": 160}

RERUN = "python -m tests.test_fuzz --show"  # + MODEL VARIANT CASE, in ROOT: what a failure message says
KINDS = ("truncate", "bytes", "bits", "uoffset", "soffset", "vtable", "veclen", "scalar")
OFFSET_KINDS = ("buffer_u64", "truncate", "bytes", "uoffset", "veclen", "scalar")


# -- finding the models ------------------------------------------------------------------
def model_path(name: str) -> Path:
    """The zoo's copy of a model, fetched into the cache when absent."""
    from gpulite import zoo

    return zoo.resolve(name)


# -- a walker over *valid* models that records where the structure lives -------------------
# Independent of gpulite's reader on purpose: the fuzzer must not share the code it tests.
# slot -> spec; specs: ("s", width) scalar, ("t", name) table, ("tt", name) vector of
# tables, ("v", width, record_elements) vector of scalars, ("str",), ("u", type_slot, resolver).
def _options_schema(table_name: str) -> dict[int, tuple]:
    from gpulite.model import schema_gen as sg

    width = {"i8": 1, "u8": 1, "bool": 1, "i32": 4, "u32": 4, "f32": 4, "i64": 8}
    out: dict[int, tuple] = {}
    for _name, slot, kind, _default in sg.OPTIONS_FIELDS.get(table_name, ()):
        if kind == "str":
            out[slot] = ("str",)
        elif kind.startswith("vec_"):
            w = {"u8": 1, "bool": 1, "i32": 4, "u32": 4, "f32": 4, "i64": 8}[kind[4:]]
            out[slot] = ("v", w, kind in ("vec_i32", "vec_u32"))
        else:
            out[slot] = ("s", width[kind])
    return out


def _builtin_options(type_code: int, second: bool) -> tuple[str, dict[int, tuple]] | None:
    from gpulite.model import schema_gen as sg

    enum = sg.BuiltinOptions2 if second else sg.BuiltinOptions
    try:
        name = enum(type_code).name
    except ValueError:
        return None
    return name, _options_schema(name)


def _index_vector(type_code: int) -> tuple[str, dict[int, tuple]] | None:
    w = {1: 4, 2: 2, 3: 1}.get(type_code)
    return None if w is None else ("IndexVector", {0: ("v", w, True)})


SCHEMA: dict[str, dict[int, tuple]] = {
    "Model": {0: ("s", 4), 1: ("tt", "OperatorCode"), 2: ("tt", "SubGraph"), 3: ("str",),
              4: ("tt", "Buffer"), 5: ("v", 4, True), 6: ("tt", "Metadata"), 7: ("tt", "SignatureDef")},
    "OperatorCode": {0: ("s", 1), 1: ("str",), 2: ("s", 4), 3: ("s", 4)},
    "SubGraph": {0: ("tt", "Tensor"), 1: ("v", 4, True), 2: ("v", 4, True), 3: ("tt", "Operator"), 4: ("str",)},
    "Tensor": {0: ("v", 4, True), 1: ("s", 1), 2: ("s", 4), 3: ("str",), 4: ("t", "QuantizationParameters"),
               5: ("s", 1), 6: ("t", "SparsityParameters"), 7: ("v", 4, True), 8: ("s", 1)},
    "QuantizationParameters": {0: ("v", 4, False), 1: ("v", 4, False), 2: ("v", 4, False), 3: ("v", 8, True),
                               4: ("s", 1), 6: ("s", 4)},
    "SparsityParameters": {0: ("v", 4, True), 1: ("v", 4, True), 2: ("tt", "DimensionMetadata")},
    "DimensionMetadata": {0: ("s", 1), 1: ("s", 4), 2: ("s", 1), 3: ("u", 2, _index_vector),
                          4: ("s", 1), 5: ("u", 4, _index_vector)},
    "Operator": {0: ("s", 4), 1: ("v", 4, True), 2: ("v", 4, True), 3: ("s", 1),
                 4: ("u", 3, lambda c: _builtin_options(c, False)), 5: ("v", 1, False), 6: ("s", 1),
                 7: ("v", 1, False), 8: ("v", 4, True), 9: ("s", 8), 10: ("s", 8), 11: ("s", 1),
                 12: ("u", 11, lambda c: _builtin_options(c, True))},
    "Buffer": {0: ("v", 1, False), 1: ("s", 8), 2: ("s", 8)},
    "Metadata": {0: ("str",), 1: ("s", 4)},
    "SignatureDef": {0: ("tt", "TensorMap"), 1: ("tt", "TensorMap"), 2: ("str",), 4: ("s", 4)},
    "TensorMap": {0: ("str",), 1: ("s", 4)},
}


def walk(data: bytes) -> dict[str, list[tuple[int, int]]]:
    """Positions (and widths) of every structural field of a valid model, by category."""
    out: dict[str, list[tuple[int, int]]] = {k: [] for k in
                                             ("uoffset", "soffset", "vtable", "veclen", "scalar", "buffer_u64")}

    def u32(p: int) -> int:
        return struct.unpack_from("<I", data, p)[0]

    def vector(p: int) -> int:
        out["uoffset"].append((p, 4))
        v = p + u32(p)
        out["veclen"].append((v, 4))
        return v

    def table(pos: int, name: str, schema: dict[int, tuple]) -> None:
        out["soffset"].append((pos, 4))
        vt = pos - struct.unpack_from("<i", data, pos)[0]
        vt_len = struct.unpack_from("<H", data, vt)[0]
        out["vtable"].extend((vt + k, 2) for k in range(0, vt_len, 2))
        fields = {}
        for slot in range((vt_len - 4) // 2):
            rel = struct.unpack_from("<H", data, vt + 4 + 2 * slot)[0]
            if rel:
                fields[slot] = pos + rel
        for slot, p in fields.items():
            spec = schema.get(slot)
            if spec is None:
                continue
            kind = spec[0]
            if kind == "s":
                cat = "buffer_u64" if name == "Buffer" and slot in (1, 2) else "scalar"
                out[cat].append((p, spec[1]))
            elif kind == "str":
                vector(p)
            elif kind == "v":
                v = vector(p)
                if spec[2]:
                    out["scalar"].extend((v + 4 + spec[1] * i, spec[1]) for i in range(u32(v)))
            elif kind == "t":
                out["uoffset"].append((p, 4))
                table(p + u32(p), spec[1], SCHEMA[spec[1]])
            elif kind == "tt":
                v = vector(p)
                for i in range(u32(v)):
                    e = v + 4 + 4 * i
                    out["uoffset"].append((e, 4))
                    table(e + u32(e), spec[1], SCHEMA[spec[1]])
            elif kind == "u":
                type_pos = fields.get(spec[1])
                code = data[type_pos] if type_pos else 0
                sub = spec[2](code) if code else None
                out["uoffset"].append((p, 4))
                if sub is not None:
                    table(p + u32(p), sub[0], sub[1])

    out["uoffset"].append((0, 4))
    table(u32(0), "Model", SCHEMA["Model"])
    return out


# -- the offset-buffer variant --------------------------------------------------------------
def with_offset_buffers(data: bytes) -> bytes:
    """Re-serialize a model with every non-empty buffer stored after the FlatBuffer."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromPackedBuf(data, 0)
    payload = []
    for b in m.buffers or []:
        if b.data is not None and len(b.data):
            payload.append(bytes(bytearray(b.data)))
            b.data, b.offset, b.size = None, 2, len(payload[-1])  # placeholders: same packed size

    def pack() -> bytes:
        builder = flatbuffers.Builder(1024)
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    head = pack()
    pos, it, tail = -(-len(head) // 16) * 16, iter(payload), bytearray()
    for b in m.buffers or []:
        if b.data is None and b.size:
            blob = next(it)
            b.offset = pos
            tail += blob + bytes(-len(blob) % 16)
            pos += len(blob) + (-len(blob) % 16)
    final = pack()
    assert len(final) == len(head), "u64 fields must keep the packed size"
    return final + bytes(-len(final) % 16) + bytes(tail)


# -- mutations ------------------------------------------------------------------------------
def _interesting(width: int, orig: int, size: int, rng: random.Random) -> int:
    bits = 8 * width
    mask = (1 << bits) - 1
    common = [0, 1, 2, 3, 4, 8, mask, mask - 3, 1 << (bits - 1), (1 << (bits - 1)) - 1,
              orig + 1, orig - 1, orig + 4, orig - 4, orig * 2, orig ^ (1 << rng.randrange(bits)),
              rng.getrandbits(bits)]
    if width >= 2:
        common += [0x7FFF, 0x8000, 0xFFFE]
    if width >= 4:
        common += [size, size - 1, size - 4, size + 4, size // 2, 1 << 16, 1 << 20, 1 << 24, 0x10000000]
    if width == 8:
        common += [1 << 32, (1 << 32) - 1, 1 << 40]
    return rng.choice(common) & mask


def _poke(buf: bytearray, pos: int, width: int, rng: random.Random) -> None:
    orig = int.from_bytes(buf[pos : pos + width], "little")
    buf[pos : pos + width] = _interesting(width, orig, len(buf), rng).to_bytes(width, "little")


def _structure_pos(fields: dict[str, list[tuple[int, int]]], rng: random.Random) -> int:
    cat = rng.choice([c for c in fields if fields[c]])
    pos, width = rng.choice(fields[cat])
    return pos + rng.randrange(-8, width + 8)


def mutate(data: bytes, fields: dict[str, list[tuple[int, int]]], kind: str, rng: random.Random) -> bytes:
    """One deterministic mutation of ``data`` of the given kind."""
    n = len(data)
    if kind == "truncate":
        cut = rng.randrange(n) if rng.random() < 0.5 else min(max(_structure_pos(fields, rng), 0), n - 1)
        return data[:cut]
    buf = bytearray(data)
    if kind in ("bytes", "bits"):
        for _ in range(rng.randint(1, 4 if kind == "bytes" else 8)):
            # Half the hits land near structure: in a big model most bytes are weights.
            p = rng.randrange(n) if rng.random() < 0.5 else min(max(_structure_pos(fields, rng), 0), n - 1)
            if kind == "bytes":
                buf[p] = rng.randrange(256)
            else:
                buf[p] ^= 1 << rng.randrange(8)
        return bytes(buf)
    for _ in range(1 if rng.random() < 0.8 else 2):
        pos, width = rng.choice(fields[kind])
        _poke(buf, pos, width, rng)
    return bytes(buf)


def case_bytes(name: str, variant: str, case: int, data: bytes, fields) -> tuple[str, bytes]:
    """The mutation kind and bytes of one case (same every run)."""
    rng = random.Random(f"{SEED}:{name}:{variant}:{case}")
    kinds = [k for k in (OFFSET_KINDS if variant == "offset" else KINDS) if k in ("truncate", "bytes", "bits")
             or fields[k]]
    kind = kinds[case % len(kinds)]  # round-robin: every kind gets its share
    for _ in range(8):  # a mutation that happens to rewrite a byte with itself is redrawn
        out = mutate(data, fields, kind, rng)
        if out != data:
            return kind, out
    return kind, out


# -- the check one case must pass -----------------------------------------------------------
def check_case(data: bytes) -> tuple[str, str]:
    """Load and build an Interpreter: ("ok", "") or ("model_error", message). Anything else propagates."""
    from gpulite import Interpreter, ModelError
    from gpulite.model.reader import load

    try:
        load(data)
        it = Interpreter(model_content=data)
        it.get_input_details()
        it.get_output_details()
        it.get_tensor_details()
    except ModelError as e:
        if not str(e):
            raise AssertionError("ModelError without a message") from e
        return "model_error", str(e)
    return "ok", ""


def _check_name(message: str) -> str:
    """A ModelError message without its numbers and names: which check rejected the file."""
    return re.sub(r"'[^']*'|\d+", "#", message)[:60]


def _source(name: str, variant: str) -> tuple[bytes, dict]:
    data = model_path(name).read_bytes()
    if variant == "offset":
        data = with_offset_buffers(data)
    return data, walk(data)


def _worker(name: str, variant: str, start: int, stop: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    import logging

    logging.disable(logging.CRITICAL)
    data, fields = _source(name, variant)
    # The unmutated model must load; this also pays the imports before any case is measured.
    if check_case(data)[0] != "ok":
        raise SystemExit(f"the unmutated {name} ({variant}) does not load")
    budget = WorkBudget(lambda: check_case(data))
    for case in range(start, stop):
        kind, mutated = case_bytes(name, variant, case, data, fields)
        print(json.dumps({"start": case}), flush=True)
        t0 = time.perf_counter()
        try:
            outcome, error = check_case(mutated)
            error = _check_name(error)
        except BaseException as e:  # the point is to report *anything* else
            outcome, error = "crash", f"{type(e).__name__}: {e}"[:500]
        calls = budget.calls(time.perf_counter() - t0, lambda m=mutated: check_case(m))
        print(json.dumps({"case": case, "kind": kind, "outcome": outcome, "error": error,
                          "calls": calls, "call_limit": budget.limit}), flush=True)


# -- the parent side: run workers, watch for hangs and deaths ---------------------------------
def _run_worker(name: str, variant: str, start: int, stop: int) -> tuple[list[dict], str]:
    """Results of cases [start, stop), and a problem description ("" if the worker was healthy)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.test_fuzz", "--worker", name, variant, str(start), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )
    assert proc.stderr is not None
    results, current, problem = [], None, ""
    try:
        for rec in records(proc, HANG_SECONDS):
            if "start" in rec:
                current = rec["start"]
            else:
                results.append(rec)
    except WorkerHungError:
        problem = f"no progress for {HANG_SECONDS} s (hung) in case {current}"
    rc = proc.wait()
    err = proc.stderr.read().decode(errors="replace")[-2000:]
    if not problem and rc != 0:
        problem = f"worker died with exit code {rc} in case {current}: {err}"
    return results, problem


def _run(name: str, variant: str, count: int) -> list[dict]:
    bounds = [count * k // WORKERS for k in range(WORKERS + 1)]
    with ThreadPoolExecutor(WORKERS) as pool:
        parts = list(pool.map(lambda k: _run_worker(name, variant, bounds[k], bounds[k + 1]), range(WORKERS)))
    problems = [p for _, p in parts if p]
    assert not problems, f"{name} ({variant}): " + "; ".join(problems)
    return [r for res, _ in parts for r in res]


def _assert_all_good(name: str, variant: str, count: int, kinds: tuple[str, ...]) -> None:
    results = _run(name, variant, count)
    assert sorted(r["case"] for r in results) == list(range(count))
    how = f"(rerun one with: cd {ROOT} && {RERUN} {name} {variant} CASE)"
    crashes = [f"case {r['case']} [{r['kind']}]: {r['error']}" for r in results if r["outcome"] == "crash"]
    assert not crashes, f"{len(crashes)} mutated {name} files raised something other than ModelError {how}:\n" \
        + "\n".join(crashes[:20])
    heavy = over_budget(results)
    assert not heavy, f"cases of {name} ({variant}) did far more work than the unmutated model {how}: {heavy[:20]}"
    # The fuzzer is only worth something if it reaches past the first check and is rejected
    # by many different ones: require both outcomes and every mutation kind.
    outcomes = {r["outcome"] for r in results}
    assert outcomes == {"ok", "model_error"}, f"{name} ({variant}): outcomes {outcomes}, expected both"
    checks = {r["error"] for r in results if r["outcome"] == "model_error"}
    assert len(checks) >= MIN_CHECKS, f"{name} ({variant}): only {len(checks)} distinct rejections: {sorted(checks)}"
    used = {r["kind"] for r in results}
    assert used == set(kinds), f"{name} ({variant}): mutation kinds used {sorted(used)}, expected {sorted(kinds)}"


def test_fuzz_budget_is_at_least_2000_cases():
    assert sum(CASES.values()) + sum(OFFSET_CASES.values()) >= 2000


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_mutated_model_loads_or_raises_model_error(name):
    _assert_all_good(name, "plain", CASES[name], KINDS)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OFFSET_CASES))
def test_mutated_offset_buffers_load_or_raise_model_error(name):
    _assert_all_good(name, "offset", OFFSET_CASES[name], OFFSET_KINDS)


def test_offset_buffer_variant_reads_the_same_weights():
    """The re-serialized variant is a faithful model, so its mutations test the offset path."""
    import numpy as np

    from gpulite.model.reader import load

    data = model_path("hand_recrop").read_bytes()
    variant = with_offset_buffers(data)
    a, b = load(data), load(variant)
    assert walk(variant)["buffer_u64"], "the variant must store buffers by offset/size"
    ta, tb = a.subgraphs[0].tensors, b.subgraphs[0].tensors
    assert len(ta) == len(tb)
    for x, y in zip(ta, tb, strict=True):
        assert (x.data is None) == (y.data is None), x.name
        if x.data is not None:
            np.testing.assert_array_equal(x.data, y.data)


def test_mutations_are_deterministic_and_real():
    data = model_path("hand_recrop").read_bytes()
    fields = walk(data)
    for case in range(40):
        k1, m1 = case_bytes("hand_recrop", "plain", case, data, fields)
        k2, m2 = case_bytes("hand_recrop", "plain", case, data, fields)
        assert (k1, m1) == (k2, m2)
        assert m1 != data


def test_walker_finds_the_structure():
    """Guards the targeted mutations: a walker that found nothing would fuzz nothing."""
    fields = walk(model_path("hand_recrop").read_bytes())
    for cat in ("uoffset", "soffset", "vtable", "veclen", "scalar"):
        assert len(fields[cat]) > 100, cat


def _show(name: str, variant: str, case: int) -> None:
    data, fields = _source(name, variant)
    kind, mutated = case_bytes(name, variant, case, data, fields)
    print(f"{name} {variant} case {case}: {kind}, {len(mutated)} bytes")
    try:
        print(*check_case(mutated))
    except BaseException:  # print whatever it was
        traceback.print_exc()


if __name__ == "__main__":  # python -m tests.test_fuzz, in ROOT
    if sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "--show":
        _show(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit("usage: test_fuzz.py --worker NAME VARIANT START STOP | --show NAME VARIANT CASE")


def test_the_rerun_hint_runs_as_printed():
    """The command a failure message prints works from the repository's root (issue 24: it said
    ``python tests/test_fuzz.py --show``, which fails with ``No module named 'tests'``)."""
    r = subprocess.run([*RERUN.split(), "hand_recrop", "plain", "3"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("hand_recrop plain case 3: "), r.stdout


def test_work_is_bounded_by_calls_not_seconds():
    """A case over the budget is caught by its call count whatever the clock says, and a case the
    clock calls slow but that does little work passes (issue 24: a loaded machine failed the fuzz)."""
    from tests.worker_records import WorkBudget, call_count, over_budget

    budget = WorkBudget(lambda: sorted(range(100)))
    heavy = lambda: [abs(i) for i in range(budget.limit)]  # noqa: E731 - over the limit in builtin calls alone
    light = lambda: sorted(range(100))  # noqa: E731
    assert call_count(heavy) > budget.limit and call_count(heavy) == call_count(heavy)
    slow = 1e6 * (budget.clean_seconds + 1)  # "slow" by the clock: counted
    records = [{"case": 0, "calls": budget.calls(slow, heavy), "call_limit": budget.limit},
               {"case": 1, "calls": budget.calls(slow, light), "call_limit": budget.limit}]
    assert [r.split(":")[0] for r in over_budget(records)] == ["case 0 [None]"]
    assert budget.calls(0.0, heavy) is None  # as fast as the clean case: not worth counting
