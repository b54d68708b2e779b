"""Elementwise binary ops (float). Quantized forms live in quantized_elementwise.py."""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.activation import activation_fn
from gpulite.backends.kernels import register_kernel

_FLOAT_BINARY = {"ADD": np.add}


def _binary(ufunc):
    def factory(node, ctx):
        a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
        act = activation_fn(node.activation)

        def run():
            ufunc(a, b, out=out)
            if act:
                act(out)
        return run
    return factory


for _op, _fn in _FLOAT_BINARY.items():
    register_kernel(_op, "cpu", _binary(_fn))
