"""``gpulite ops``: the coverage table is true, and the README and docs/ops.md say what it says.

The table is read from the kernel registry and the int8 declarations; here a sample of its
claims is checked by running int8 and float single-op models: where it says int8 on cpu, the
cpu backend runs the quantized model (within one step of LiteRT); where it says int8 on
webgpu, the model runs wholly on the GPU (``quantized="float"``), and where it says webgpu exact,
also under ``quantized="exact"``, equal to LiteRT; where it says float on
webgpu, a float model runs wholly on the GPU; and where it says an op has no kernel,
``allocate_tensors`` refuses the model with ``UnsupportedOpError``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends import coverage
from gpulite.cli import main
from gpulite.errors import UnsupportedOpError
from gpulite.model.opdefs import Op
from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import adapter_problem

ROOT = Path(__file__).resolve().parent.parent
Q = (0.05, -3)


def single(op: str, dtype, n_in: int = 1, consts=(), out_shape=(1, 4, 4, 4), out_dtype=None, **options) -> bytes:
    q = Q if dtype == np.int8 else None
    mb = ModelBuilder()
    ins = [mb.input(f"x{k}", (1, 4, 4, 4), dtype, quant=q) for k in range(n_in)]
    ins += [mb.const(f"c{k}", v) for k, v in enumerate(consts)]
    out_dtype = dtype if out_dtype is None else out_dtype
    y = mb.tensor("y", out_shape, out_dtype, quant=q if out_dtype == np.int8 else None)
    mb.op(op, ins, [y], **options)
    mb.output(y)
    return mb.build()


SAMPLE = {  # op -> (n_in, constant inputs, output shape, options)
    Op.ADD: (2, (), (1, 4, 4, 4), {}),
    Op.MAXIMUM: (2, (), (1, 4, 4, 4), {}),
    Op.RESHAPE: (1, (np.array([1, 64], np.int32),), (1, 64), {}),
    Op.TRANSPOSE: (1, (np.array([0, 2, 1, 3], np.int32),), (1, 4, 4, 4), {}),
    Op.MEAN: (1, (np.array([1, 2], np.int32),), (1, 1, 1, 4), {"keep_dims": True}),
    Op.MAX_POOL_2D: (1, (), (1, 2, 2, 4), {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2,
                                           "filter_width": 2}),
    Op.HARD_SWISH: (1, (), (1, 4, 4, 4), {}),
    Op.GELU: (1, (), (1, 4, 4, 4), {}),
    Op.TILE: (1, (np.array([1, 1, 1, 2], np.int32),), (1, 4, 4, 8), {}),
    Op.SPLIT: (1, (), (1, 4, 4, 4), {}),  # built below (axis first)
    Op.L2_POOL_2D: (1, (), (1, 2, 2, 4), {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2,
                                          "filter_width": 2}),
}


def model(op: Op, dtype) -> bytes:
    n_in, consts, shape, options = SAMPLE[op]
    if op == Op.SPLIT:  # SPLIT takes its axis first
        q = Q if dtype == np.int8 else None
        mb = ModelBuilder()
        axis = mb.const("axis", np.array(3, np.int32))
        x = mb.input("x", (1, 4, 4, 4), dtype, quant=q)
        ys = [mb.tensor(f"y{k}", (1, 4, 4, 2), dtype, quant=q) for k in range(2)]
        mb.op("SPLIT", [axis, x], ys, num_splits=2)
        mb.output(*ys)
        return mb.build()
    return single(op.value, dtype, n_in, consts, shape, **options)


def inputs(m: bytes, dtype) -> list[np.ndarray]:
    it = Interpreter(model_content=m)
    rng = np.random.default_rng(0)
    if dtype == np.int8:
        return [rng.integers(-128, 128, d["shape"]).astype(np.int8) for d in it.get_input_details()]
    return [rng.standard_normal(d["shape"]).astype(np.float32) for d in it.get_input_details()]


def run(m: bytes, xs: list[np.ndarray], **kw) -> tuple[list[np.ndarray], dict]:
    it = Interpreter(model_content=m, **kw)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()], it.get_plan()


def litert(m: bytes, xs: list[np.ndarray]) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    it = LiteRT(model_content=m)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def on_gpu(plan: dict) -> bool:
    return [p["backend"] for p in plan["partitions"]] == ["webgpu"] and not plan["crossings"]


@pytest.mark.parametrize("op", list(SAMPLE), ids=str)
def test_cpu_claims_hold(op: Op) -> None:
    r = coverage.row(op)
    for dtype, claim in ((np.float32, r.cpu_float), (np.int8, r.cpu_int8 == "yes")):
        m = model(op, dtype)
        xs = inputs(m, dtype)
        if claim:
            got = run(m, xs, backend="cpu")[0]
            for a, e in zip(got, litert(m, xs), strict=True):
                assert np.abs(a.astype(np.float64) - e).max() <= (1 if dtype == np.int8 else 1e-4), (op, dtype)
        elif not r.cpu_float:  # no kernel at all: refused when allocated (an undeclared int8 kernel may run)
            with pytest.raises(UnsupportedOpError, match=op.value):
                run(m, xs, backend="cpu")


@pytest.mark.skipif(adapter_problem() is not None, reason=str(adapter_problem()))
@pytest.mark.parametrize("op", list(SAMPLE), ids=str)
def test_webgpu_claims_hold(op: Op) -> None:
    r = coverage.row(op)
    for dtype, claim in ((np.float32, r.webgpu_float), (np.int8, r.webgpu_int8 == "yes")):
        m = model(op, dtype)
        xs = inputs(m, dtype)
        if claim:
            plan = run(m, xs, backend="webgpu", quantized="float")[1]
            assert on_gpu(plan), (op, dtype, plan["partitions"])
        elif r.cpu_float:  # the node falls back to the cpu kernel, which may refuse int8 (L2_POOL_2D)
            try:
                plan = run(m, xs, backend="webgpu", quantized="float")[1]
            except UnsupportedOpError:
                assert dtype == np.int8 and r.cpu_int8 != "yes", (op, dtype)
                continue
            assert not on_gpu(plan), (op, dtype, plan["partitions"])
        else:
            with pytest.raises(UnsupportedOpError, match=op.value):
                run(m, xs, backend="webgpu")


@pytest.mark.skipif(adapter_problem() is not None, reason=str(adapter_problem()))
@pytest.mark.parametrize("op", list(SAMPLE), ids=str)
def test_webgpu_exact_claims_hold(op: Op) -> None:
    """*webgpu exact*: an int8 model runs wholly on the GPU under quantized="exact", equal to LiteRT;
    where it says no, the node runs on the CPU fallback (or is refused, as on cpu)."""
    r = coverage.row(op)
    m = model(op, np.int8)
    xs = inputs(m, np.int8)
    try:
        got, plan = run(m, xs, backend="webgpu", quantized="exact")
    except UnsupportedOpError:
        assert r.webgpu_exact != "yes" and r.cpu_int8 != "yes", op
        return
    assert on_gpu(plan) == (r.webgpu_exact == "yes"), (op, r.webgpu_exact, plan["partitions"])
    for a, e in zip(got, litert(m, xs), strict=True):
        np.testing.assert_array_equal(a, e)


def test_every_builtin_op_has_a_row() -> None:
    rows = coverage.table()
    assert len(rows) == len([o for o in Op if not o.is_custom]) - 3  # less CUSTOM, DELEGATE, placeholder
    assert {r.op for r in rows if not r.why} == {r.op for r in rows if r.cpu_float and r.webgpu_float}


def test_readme_states_the_table() -> None:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"(\d+) of LiteRT's (\d+) builtin ops on cpu, (\d+) on webgpu", readme)
    assert found, "README.md lacks the operator sentence"
    assert found.group(0) == coverage.summary(), "README.md is stale: `gpulite ops --summary` gives the sentence"


def test_docs_page_is_current() -> None:
    assert (ROOT / "docs" / "ops.md").read_text() == coverage.markdown(), \
        "docs/ops.md is stale: regenerate it with `gpulite ops --markdown > docs/ops.md`"


def test_cli_prints_the_table(capsys) -> None:
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^CONV_2D\s+yes\s+yes\s+yes\s+yes\s+(yes|no)$", out, re.M), out[:500]
    assert re.search(r"^LOGISTIC\s+yes\s+yes\s+yes\s+yes\s+yes$", out, re.M), out[:500]
    assert out.rstrip().endswith(coverage.summary())
    assert main(["ops", "--summary"]) == 0
    assert capsys.readouterr().out.strip() == coverage.summary()
