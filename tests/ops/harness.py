"""Run one model in LiteRT (the oracle) and in gpulite, and compare every output."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tests.compare import assert_same


def _run(interp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Feed ``inputs`` in graph-input order through a tflite_runtime-style interpreter."""
    details = interp.get_input_details()
    if len(inputs) != len(details):
        raise ValueError(f"model has {len(details)} inputs, got {len(inputs)} arrays")
    resized = False
    for d, x in zip(details, inputs):
        if tuple(d["shape"]) != np.shape(x):
            interp.resize_tensor_input(d["index"], list(np.shape(x)))
            resized = True
    if resized:
        details = interp.get_input_details()
    interp.allocate_tensors()
    for d, x in zip(details, inputs):
        interp.set_tensor(d["index"], np.asarray(x))
    interp.invoke()
    # Copies: the interpreter may reuse output memory on the next invoke.
    return [np.array(interp.get_tensor(d["index"]), copy=True) for d in interp.get_output_details()]


def run_litert(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` on ``inputs`` from ai_edge_litert's Interpreter, default options."""
    from ai_edge_litert.interpreter import Interpreter

    return _run(Interpreter(model_content=bytes(model)), inputs)


def run_gpulite(model: bytes, inputs: Sequence[np.ndarray], backend: str) -> list[np.ndarray]:
    """Outputs of ``model`` on ``inputs`` from ``gpulite.Interpreter`` on ``backend``."""
    from gpulite import Interpreter

    return _run(Interpreter(model_content=bytes(model), backend=backend), inputs)


def check_op(model: bytes, inputs: Sequence[np.ndarray], backend: str, *, rtol: float = 1e-5,
             int_tol: int = 0) -> None:
    """Run ``model`` in LiteRT and in gpulite on ``backend``; assert every output matches.

    Parameters
    ----------
    model : bytes
        A .tflite file (usually from :class:`gpulite.testing.tflite_writer.ModelBuilder`).
    inputs : sequence of ndarray
        One array per graph input, in order.
    backend : str
        ``"cpu"`` or ``"webgpu"``.
    rtol, int_tol : float, int
        Passed to :func:`tests.compare.assert_same` for every output.
    """
    expected = run_litert(model, inputs)
    actual = run_gpulite(model, inputs, backend)
    if len(actual) != len(expected):
        raise AssertionError(f"gpulite gave {len(actual)} outputs, LiteRT {len(expected)}")
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_same(a, e, rtol=rtol, int_tol=int_tol, what=f"output {i} ({backend})")
