"""benchmarks/quantized_error.py (docs/webgpu.md, "Both modes, measured on the corpora") on two
files: its float32 siblings are found (onnx_decoder's through the NCHW litert-torch export) and
its figures are what the table says they are."""

from __future__ import annotations

import pytest

from tests.assets import benchmark
from tests.webgpu.support import adapter_problem

pytestmark = pytest.mark.skipif(adapter_problem() is not None, reason=adapter_problem() or "")


def test_rows_of_two_files():
    tool = benchmark("quantized_error")
    paths = [p for p in tool.files(["lstm_int8io", "onnx_decoder_int8io"]) if not p.stem.startswith("bi")]
    assert [p.stem for p in paths] == ["lstm_int8io", "onnx_decoder_int8io"]
    assert tool.float_sibling(paths[1]) == (paths[1].parent / "torch_decoder_float32.tflite", True)
    rows = [tool.measure(p, seeds=1) for p in paths]
    for row in rows:
        (float_litert, float_f32), (exact_litert, exact_f32) = row["float"], row["exact"]
        assert row["placement"] == "gpu"
        assert exact_litert == (0.0, 0.0)  # bit-equal on seed 0 (tests/webgpu/test_exact_int8_models.py)
        assert 0 < float_f32[0] < 1 and 0 < exact_f32[0] < 4  # the same model: within a few steps
        assert float_litert[0] <= 4
    table = tool.table(rows).splitlines()
    assert len(table) == 4 and table[2].startswith("| corpus/lstm_int8io | 4 | 1.6% |")
