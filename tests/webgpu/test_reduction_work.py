"""No reduction or matrix-product dispatch of a compiled zoo plan leaves more than 1,024
elements to one thread (issue 20): every such dispatch declares ``reduction_per_thread``
(webgpu/program.py), read back from the plan by ``instrument.reduction_work``. The op
suite checks the same after each webgpu case (tests/ops/harness.py, ``check_watched``)."""

from __future__ import annotations

import pytest

from gpulite import Interpreter, zoo
from tests.assets import model_path
from tests.ops.harness import reduction_problems
from tests.webgpu.support import adapter_problem

pytestmark = pytest.mark.skipif(adapter_problem() is not None, reason=adapter_problem() or "")


@pytest.mark.parametrize("precision", ["fp32", "fp16"])  # fp16's f16 products take K slices, not groups
@pytest.mark.parametrize("name", zoo.NAMES)
def test_zoo_reductions_split_across_threads(name: str, precision: str) -> None:
    it = Interpreter(model_path=str(model_path(name)), backend="webgpu", precision=precision)
    it.allocate_tensors()
    assert reduction_problems(it._exe) == []


def test_check_sees_a_long_reduction() -> None:
    """The check is not vacuous: a thread that folds too much is reported (the kernel's
    metadata is taken at its word, so the program is altered after compiling)."""
    from dataclasses import replace

    it = Interpreter(model_path=str(model_path("selfie_segmentation")), backend="webgpu")
    it.allocate_tensors()
    part = next(p for p in it._exe.parts if p.work)
    pools = [i for i, p in enumerate(part.work) if p.name.startswith("global average_pool_2d")]
    assert pools, "selfie_segmentation has global pools"
    part.work[pools[0]] = replace(part.work[pools[0]], reduction_per_thread=4096)
    assert any("folds 4096 elements per thread" in p for p in reduction_problems(it._exe))
