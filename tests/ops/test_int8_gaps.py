"""int8 / int16 ops LiteRT's kernels run quantized that gpulite once refused (issue 23), each
checked on every input code, bit-equal to LiteRT's reference kernels and to default LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops.quant_ref import check_quantized
from tests.ops.test_quantized_elementwise import all_values, model

I8, I16 = np.int8, np.int16

# ABS (elementwise.cc AbsEvalQuantized): |q - zp_in|, rescaled when the scales differ, + zp_out
ABS_CASES = {
    "int8-rescale": (I8, (0.05, 3), (0.03, -100)),
    "int8-same-scale": (I8, (0.04, -20), (0.04, -128)),
    "int8-rescale-up": (I8, (0.01, 0), (0.2, -120)),  # output scale 20x the input's: many ties
    "int16-rescale": (I16, (0.001, 0), (0.0007, 0)),
    "int16-same-scale": (I16, (0.0005, 0), (0.0005, 0)),
}


@pytest.mark.parametrize("case", list(ABS_CASES))
def test_abs_quantized_all_values(case: str, backend: str) -> None:
    dt, qi, qo = ABS_CASES[case]
    x = all_values(dt, 2)
    check_quantized(model("ABS", [(x.shape, dt, qi)], (x.shape, dt, qo)), [x], backend)


# RELU_0_TO_1 (activations.cc QuantizedReluX(0, 1)): rescaled by s_in / s_out, clamped to
# [zp_out + round(0 / s_out), zp_out + round(1 / s_out)]
RELU01_CASES = {
    "int8": (np.int8, (0.005, -10), (1 / 200, -100)),  # 0 and 1 at codes -100 and 100
    "int8-rescale-clamps-inside": (np.int8, (0.05, 3), (0.03, -100)),  # 1.0 at code -67
    "uint8": (np.uint8, (0.005, 120), (1 / 200, 20)),
}


@pytest.mark.parametrize("case", list(RELU01_CASES))
def test_relu_0_to_1_quantized_all_values(case: str, backend: str) -> None:
    dt, qi, qo = RELU01_CASES[case]
    x = all_values(dt, 2)
    check_quantized(model("RELU_0_TO_1", [(x.shape, dt, qi)], (x.shape, dt, qo)), [x], backend)


# NEG, FLOOR_DIV, FLOOR_MOD on quantized int8 / int16: LiteRT's kernels compute on the codes
# and ignore the scales (NEG wraps -128 to -128; FLOOR_DIV saturates -128 // -1 to 127)
@pytest.mark.parametrize("dt", [I8, I16], ids=["int8", "int16"])
def test_neg_quantized_negates_codes(dt, backend: str) -> None:
    x = all_values(dt, 1) if dt == I8 else np.arange(-32768, 32768, 5).astype(dt).reshape(1, -1)
    q = (0.05, 3) if dt == I8 else (0.001, 0)
    check_quantized(model("NEG", [(x.shape, dt, q)], (x.shape, dt, (0.04, -2) if dt == I8 else (0.002, 0))),
                    [x], backend)


def _code_pairs(dt) -> tuple[np.ndarray, np.ndarray]:
    """Every int8 pair with a nonzero divisor; for int16 the extremes and a spread of values."""
    if dt == I8:
        v = np.arange(-128, 128)
    else:
        v = np.r_[-32768, -32767, -1000, -129, -7, -1, 1, 2, 7, 129, 1000, 32767]
    a, b = np.meshgrid(v, v[v != 0], indexing="ij")
    return a.astype(dt).reshape(1, -1), b.astype(dt).reshape(1, -1)


@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD"])
@pytest.mark.parametrize("dt", [I8, I16], ids=["int8", "int16"])
def test_floor_div_mod_quantized_codes(op: str, dt, backend: str) -> None:
    a, b = _code_pairs(dt)
    q1, q2, qo = ((0.05, 3), (0.04, -1), (0.1, 2)) if dt == I8 else ((0.001, 0), (0.002, 0), (0.003, 0))
    check_quantized(model(op, [(a.shape, dt, q1), (b.shape, dt, q2)], (a.shape, dt, qo)), [a, b], backend)
