"""Quantized op checks against LiteRT, bit for bit.

LiteRT's default interpreter rescales quantized conv/fully-connected outputs with XNNPACK
(fp32 requantization: ``lrintf(acc * float_scale)``) or, where its delegate declines the op,
its optimized builtin kernels (NEON / ruy: halves rounded up), both of which can land one code
away from TFLite's reference kernels (``reference_integer_ops``: gemmlowp's double-rounding
``MultiplyByQuantizedMultiplier``, halves away from zero). gpulite's conv-like kernels follow
default LiteRT (``quantized_conv.conv_rescale``, ``fully_connected.fc_rescale``); other ops
the reference kernels. So a quantized case is checked twice: exactly against the kernels
gpulite follows (LiteRT built with ``OpResolverType.BUILTIN_REF``, or the default LiteRT for
``oracle="default"``), and within ``int_tol`` against the other."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tests.compare import assert_same
from tests.ops.harness import run_gpulite, run_litert

# Why the default-LiteRT comparison may be off by one code for conv / depthwise / FC.
OPTIMIZED_ROUNDING = ("LiteRT's default kernels (XNNPACK fp32 requantization, NEON / ruy rounding) "
                      "round some outputs one code differently from TFLite's reference kernels")


def run_litert_reference(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` from LiteRT's reference kernels (no XNNPACK, no optimized kernels)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=bytes(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs, strict=True):
        it.set_tensor(d["index"], np.asarray(x))
    it.invoke()
    return [np.array(it.get_tensor(d["index"]), copy=True) for d in it.get_output_details()]


def check_quantized(model: bytes, inputs: Sequence[np.ndarray], backend: str, *, int_tol: int = 0,
                    max_saturated: float = 0.5, ref_model: bytes | None = None,
                    oracle: str = "reference") -> np.ndarray:
    """Exact against LiteRT's reference kernels, within ``int_tol`` of default LiteRT; with
    ``oracle="default"`` the other way round (the ops gpulite rescales as XNNPACK does).

    ``ref_model`` is what LiteRT runs instead of ``model`` when it cannot run it but an
    equivalent model (e.g. with an explicit zero bias) computes the same function.

    ``max_saturated`` guards the test itself: if more than that fraction of the reference
    output sits at the dtype's limits the case is mostly clamping and proves little, so it
    fails rather than passing vacuously. Returns the reference output.
    """
    if oracle not in ("reference", "default"):
        raise ValueError(f"oracle must be 'reference' or 'default', got {oracle!r}")
    runs = model if ref_model is None else ref_model
    ref = run_litert_reference(runs, inputs)
    default = run_litert(runs, inputs)
    got = run_gpulite(model, inputs, backend)
    exact, near = (ref, default) if oracle == "reference" else (default, ref)
    names = {"reference": "LiteRT reference kernels", "default": "default LiteRT"}
    other = "default" if oracle == "reference" else "reference"
    for i, (a, e) in enumerate(zip(got, exact, strict=True)):
        info = np.iinfo(e.dtype)
        saturated = np.mean((e == info.min) | (e == info.max))
        assert saturated <= max_saturated, f"test case is degenerate: {saturated:.0%} of output {i} saturates"
        assert len(np.unique(e)) > 4, f"test case is degenerate: output {i} has values {np.unique(e)}"
        assert_same(a, e, int_tol=0, what=f"output {i} vs {names[oracle]} ({backend})")
    for i, (a, e) in enumerate(zip(got, near, strict=True)):
        assert_same(a, e, int_tol=int_tol, what=f"output {i} vs {names[other]} ({backend})")
    return ref[0]
