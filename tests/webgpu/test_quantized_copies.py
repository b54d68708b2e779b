"""quantized="float" and ops that copy codes between two quantizations: LiteRT's RESHAPE, GATHER,
TOPK_V2 and the like (and XNNPACK's 8-bit REDUCE_MAX / MIN) copy an int8 input's codes into an
output of another scale or zero point
(their kernels never read the quantization), so the float rewrite keeps such nodes integer
instead of requantizing the values (which gave other codes)."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import run_litert
from tests.ops.single_op import C, In, single_op
from tests.webgpu.support import require_adapter, run

require_adapter()

QI, QO = (0.05, 3), (0.1, -7)  # the output's scale and zero point differ from the input's
X = np.random.default_rng(0).permutation(np.arange(-128, 128)).astype(np.int8).reshape(1, 4, 8, 8)
I32 = np.int32
CASES = {  # op -> (inputs, options); each accepted by LiteRT with the two quantizations
    "RESHAPE": ([In(X, QI), C(np.array([4, 64], I32))], {}),
    "SQUEEZE": ([In(X, QI)], {"squeeze_dims": [0]}),
    "GATHER": ([In(X, QI), C(np.array([1, 0, 3], I32))], {"axis": 1}),
    "GATHER_ND": ([In(X, QI), C(np.array([[0, 1], [0, 3]], I32))], {}),
    "TILE": ([In(X, QI), C(np.array([1, 2, 1, 1], I32))], {}),
    "REVERSE_V2": ([In(X, QI), C(np.array([1], I32))], {}),
    # LiteRT's builtin kernels refuse these two, its default (XNNPACK) returns the extreme code
    "REDUCE_MAX": ([In(X, QI), C(np.array([1], I32))], {"keep_dims": False, "out_shape": (1, 8, 8)}),
    "REDUCE_MIN": ([In(X, QI), C(np.array([3], I32))], {"keep_dims": True, "out_shape": (1, 4, 8, 1)}),
}


def _topk() -> tuple[bytes, list[np.ndarray]]:
    x = X.reshape(8, 32)
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, np.int8, quant=QI)
    v, i = mb.tensor("v", (8, 5), np.int8, quant=QO), mb.tensor("i", (8, 5), I32)
    mb.op("TOPK_V2", [xi, mb.const("k", np.array(5, I32))], [v, i])
    mb.output(v, i)
    return mb.build(), [x]


@pytest.mark.parametrize("op", [*CASES, "TOPK_V2"])
def test_codes_copied_between_quantizations(op: str) -> None:
    if op == "TOPK_V2":
        m, feeds = _topk()
    else:
        ins, options = CASES[op]
        m, feeds = single_op(op, ins, out_quant=QO, **options)
    want = run_litert(m, feeds)
    got = run(Interpreter(model_content=m, backend="webgpu", quantized="float"), feeds)
    for a, e in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, e)
