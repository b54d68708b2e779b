"""Converter-written models of the ops the suite builds by hand (TOPK_V2, L2_NORMALIZATION,
LOCAL_RESPONSE_NORMALIZATION, UNSORTED_SEGMENT_MAX, CONV_3D, CONV_3D_TRANSPOSE), against LiteRT:
the TensorFlow converter's own encoding of their options and operands
(``tests/data/ops/converted_*.tflite``, written by ``tools/make_op_models.py``)."""

from __future__ import annotations

import pathlib
import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from tests.ops.harness import check_op

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "ops"
MODELS = sorted(p.stem.removeprefix("converted_") for p in DATA.glob("converted_*.tflite"))


def test_the_models_are_there() -> None:
    assert len(MODELS) == 6, MODELS


@pytest.mark.parametrize("name", MODELS)
def test_converted_model(name: str, backend: str) -> None:
    model = (DATA / f"converted_{name}.tflite").read_bytes()
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    details = Interpreter(model_content=model).get_input_details()
    check_op(model, [rng.standard_normal(d["shape"]).astype(np.float32) for d in details], backend, rtol=1e-5)
