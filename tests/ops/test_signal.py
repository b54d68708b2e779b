"""RFFT2D, COMPLEX_ABS, REAL, IMAG and converter-written STFT models against LiteRT.

The STFT models (``tests/data/ops/``, written by ``tools/make_op_models.py``) are what
``tf.signal.stft`` converts to; the dynamic-batch one holds an empty int32 constant as a
RESHAPE's target shape, which gpulite once refused as a tensor without producer.
"""

from __future__ import annotations

import pathlib
import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op, run_litert

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "ops"


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


def _rfft_model(shape, fft, then: str | None) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", shape, np.float32)
    n = mb.const("fft_length", np.array(fft, np.int32))
    out_shape = (*shape[:-2], fft[0], fft[1] // 2 + 1)
    z = mb.tensor("z", out_shape, np.complex64)
    mb.op("RFFT2D", [x, n], [z])
    if then is None:
        mb.output(z)
    else:
        y = mb.tensor("y", out_shape, np.float32)
        mb.op(then, [z], [y])
        mb.output(y)
    return mb.build()


# (input shape, fft_length): equal, cropped in both dims, zero-padded in both dims, batched
RFFT_CASES = {"same": ((1, 8, 16), (8, 16)), "crop": ((2, 12, 20), (8, 16)), "pad": ((3, 5), (8, 8)),
              "batched": ((2, 3, 4, 32), (4, 32)), "one-row": ((1, 1, 64), (1, 64))}


@pytest.mark.parametrize("then", [None, "COMPLEX_ABS", "REAL", "IMAG"], ids=["complex", "abs", "real", "imag"])
@pytest.mark.parametrize("case", list(RFFT_CASES))
def test_rfft2d(case: str, then: str | None, backend: str) -> None:
    shape, fft = RFFT_CASES[case]
    x = (_rng(case) .standard_normal(shape) * 3).astype(np.float32)
    check_op(_rfft_model(shape, fft, then), [x], backend, rtol=1e-5)


def test_rfft2d_refuses_lengths_litert_refuses() -> None:
    with pytest.raises(ShapeError, match="powers of two"):
        Interpreter(model_content=_rfft_model((4, 6), (4, 6), None), backend="cpu").allocate_tensors()


def test_stft_model(backend: str) -> None:
    x = _rng("stft").standard_normal((1, 256)).astype(np.float32)
    check_op((DATA / "stft.tflite").read_bytes(), [x], backend, rtol=1e-5)


def test_stft_dynamic_batch_model_is_not_malformed() -> None:
    """Its empty RESHAPE-shape constant is a constant: the model loads, and either runs like
    LiteRT or is refused as unsupported (run-time STRIDED_SLICE bounds, until the shape chain
    folds at allocate), never a ModelError."""
    model = (DATA / "stft_dynamic_batch.tflite").read_bytes()
    x = _rng("stft-dyn").standard_normal((1, 256)).astype(np.float32)
    it = Interpreter(model_content=model, backend="cpu")
    try:
        it.allocate_tensors()
    except UnsupportedOpError as e:  # a kernel that needs a run-time shape constant: a refusal, not a bad file
        assert "computed at run time" in str(e), e
        return
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, [x])[0],
                               rtol=1e-5, atol=1e-5)


def test_empty_shape_constant_reshapes_to_a_scalar(backend: str) -> None:
    """RESHAPE to the empty shape given by a constant of shape (0,) stored with an empty buffer."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 1), np.float32)
    s = mb.const("shape", np.zeros(0, np.int32))
    y = mb.tensor("y", (), np.float32)
    mb.op("RESHAPE", [x, s], [y])
    mb.output(y)
    check_op(mb.build(), [np.array([[2.5]], np.float32)], backend)
