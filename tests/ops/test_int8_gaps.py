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
