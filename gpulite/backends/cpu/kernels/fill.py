"""ZEROS_LIKE: zeros of the input's shape and dtype (float32, int32 or int64, as LiteRT's kernel)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

ZEROS_LIKE_DTYPES = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64))


@register_kernel(Op.ZEROS_LIKE, "cpu")
def zeros_like(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Fill the output with zeros on every invoke (its arena slot is shared with other tensors)."""
    if ctx.num_inputs != 1 or not ctx.has_input(0) or len(node.outputs) != 1:
        raise ShapeError(f"node {node.index} ({node.op}): expected 1 input and 1 output, got inputs "
                         f"{list(node.inputs)} and outputs {list(node.outputs)}")
    x, out = ctx.in_info(0), ctx.out_info(0)
    if x.dtype not in ZEROS_LIKE_DTYPES or out.dtype != x.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input and output must share a dtype among float32, "
                                 f"int32 and int64 (LiteRT's kernel), got {x.dtype} -> {out.dtype}")
    if out.shape != x.shape:
        raise ShapeError(f"node {node.index} ({node.op}): input {list(x.shape)} but output {list(out.shape)}")
    y = ctx.output(0)

    def run() -> None:
        y.fill(0)
    return run
