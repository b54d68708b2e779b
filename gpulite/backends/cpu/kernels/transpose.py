"""TRANSPOSE: a precomputed transposed view of the input, copied each run."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_kernel(Op.TRANSPOSE, "cpu")
def transpose(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy ``input.transpose(perm)`` into the output; ``perm`` must be a constant."""
    if ctx.const(1) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "perm is computed at run time; expected a constant")
    src, out = ctx.input(0), ctx.output(0)
    perm = layout.ints(ctx.const(1))
    if sorted(perm) != list(range(src.ndim)):
        raise ShapeError(f"{layout.where(node)}perm {perm} is not a permutation of {src.ndim} dims")
    view = src.transpose(perm)
    if out.shape != view.shape or out.dtype != src.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; transposing gives "
                         f"{list(view.shape)} {src.dtype}")

    def run() -> None:
        np.copyto(out, view)
    return run
