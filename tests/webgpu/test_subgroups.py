"""Subgroup shuffles in the reductions' trees (program.py ``subgroups``, device.py's probe).

Where the device has subgroups (CI's Vulkan lavapipe, NVIDIA...), the trees' last steps are
shuffles between the same pairs as the workgroup-memory steps they replace, so the outputs
must be bit for bit those of the trees without them. Elsewhere (OpenGL) the probe says no.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends.webgpu.device import _probe_subgroups, get_device
from tests.ops.single_op import C, In, single_op
from tests.webgpu.support import adapter_problem

pytestmark = pytest.mark.skipif(adapter_problem() is not None, reason=adapter_problem() or "")

CASES = {  # op, input shape, axes (None: the op's own last axis)
    "mean-long-row": ("MEAN", (3, 5000), [1]),
    "sum-global-pool": ("SUM", (1, 128, 128, 16), [1, 2]),
    "max-short-rows": ("REDUCE_MAX", (700, 37), [1]),
    "min-middle": ("REDUCE_MIN", (4, 999, 3), [1]),
    "softmax": ("SOFTMAX", (6, 3000), None),
    "log_softmax": ("LOG_SOFTMAX", (40, 70), None),
    "l2": ("L2_NORMALIZATION", (5, 1001), None),
    "argmax-ties": ("ARG_MAX", (7, 3000), [1]),
    "argmin-middle": ("ARG_MIN", (3, 2000, 5), [1]),
}


def _run(model: bytes, x: np.ndarray) -> np.ndarray:
    it = Interpreter(model_content=model, backend="webgpu")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


@pytest.mark.parametrize("case", CASES)
def test_shuffles_give_the_tree_values(case, monkeypatch):
    gdev = get_device()
    if not gdev.subgroups:
        pytest.skip(f"{gdev.name}: no subgroups (the trees stay in workgroup memory)")
    op, shape, axes = CASES[case]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    if op.startswith("ARG"):
        x = np.round(x * 2)  # many ties: the first extreme must win through the shuffles too
    inputs = [In(x)] if axes is None else [In(x), C(np.array(axes, np.int32))]
    if op.startswith("ARG"):
        model, _ = single_op(op, inputs, out_dtype=np.int32, out_quant=None, output_type="INT32")
    else:
        model, _ = single_op(op, inputs, **({} if axes is None else {"keep_dims": False}))
    with_shuffles = _run(model, x)
    assert any("subgroupShuffleXor" in wgsl for wgsl, _ in gdev.pipelines.values())
    monkeypatch.setattr(gdev, "_subgroups", False)
    np.testing.assert_array_equal(with_shuffles, _run(model, x))


def test_probe_without_the_feature_says_no():
    gdev = get_device()
    if "subgroup" in gdev.device.features:
        pytest.skip(f"{gdev.name} has subgroups")
    assert _probe_subgroups(gdev.device) is False and gdev.subgroups is False
