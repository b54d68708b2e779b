"""Build a one-op model whose output shape LiteRT itself decides (for the layout suites).

The output tensor's stored shape is taken from LiteRT's own shape inference (a probe run
without delegates), never from gpulite's rules, so a wrong rule in gpulite still shows up
as a shape mismatch in ``check_op``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.testing.tflite_writer import ModelBuilder, Quant


@dataclass
class In:
    """A graph input fed with ``value``."""

    value: np.ndarray
    quant: Quant | tuple | None = None


@dataclass
class C:
    """A constant input."""

    value: np.ndarray
    quant: Quant | tuple | None = None


def _build(op: str, ins: list, shape, dtype, quant, options: dict[str, Any]) -> bytes:
    mb = ModelBuilder()
    idx = []
    for k, v in enumerate(ins):
        if v is None:
            idx.append(-1)
        elif isinstance(v, C):
            idx.append(mb.const(f"c{k}", np.asarray(v.value), quant=v.quant))
        else:
            idx.append(mb.input(f"x{k}", v.value.shape, v.value.dtype, quant=v.quant))
    y = mb.tensor("y", shape, dtype, quant=quant)
    mb.op(op, idx, [y], **options)
    mb.output(y)
    return mb.build()


def single_op(op: str, ins: list, *, out_dtype: Any = None, out_quant: Quant | tuple | None = None,
              out_shape: tuple[int, ...] | None = None, **options: Any) -> tuple[bytes, list[np.ndarray]]:
    """``(model bytes, input arrays)`` for ``op`` applied to ``ins`` (``In``/``C``/None items).

    ``out_dtype``/``out_quant`` default to the first input's. ``out_shape`` is for ops whose
    LiteRT kernel insists that the stored output shape is already right (SLICE).
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    first = ins[0]
    dtype = out_dtype if out_dtype is not None else first.value.dtype
    quant = out_quant if out_quant is not None else first.quant
    feeds = [v.value for v in ins if isinstance(v, In)]
    if out_shape is not None:
        return _build(op, ins, out_shape, dtype, quant, options), feeds
    probe = None
    for guess in ((1,), (1,) * first.value.ndim):  # some kernels check the stored rank
        probe = Interpreter(model_content=_build(op, ins, guess, dtype, quant, options),
                            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        try:
            probe.allocate_tensors()
            break
        except RuntimeError:
            if guess != (1,) or first.value.ndim == 1:
                raise
    for d, x in zip(probe.get_input_details(), feeds, strict=True):
        probe.set_tensor(d["index"], x)
    probe.invoke()
    shape = probe.get_tensor(probe.get_output_details()[0]["index"]).shape
    return _build(op, ins, shape, dtype, quant, options), feeds
