"""ZEROS_LIKE: zeros of the input's shape and dtype (float32, int32 or int64, as LiteRT's kernel); BITCAST."""

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


@register_kernel(Op.BITCAST, "cpu")
def bitcast(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The input's bytes as the output's type (LiteRT's bitcast.cc): same shape for equal sizes, a
    new last dim of ``in / out`` elements for a wider input, the last dim (``out / in``) dropped for
    a narrower one. Output shape and dtype come from the model (there is no shape rule: a resized
    input is refused)."""
    x, out = ctx.input(0), ctx.output(0)
    a, b = x.dtype.itemsize, out.dtype.itemsize
    want = x.shape if a == b else (*x.shape, a // b) if a > b else x.shape[:-1]
    if len(node.inputs) != 1 or x.dtype.kind not in "biuf" or out.dtype.kind not in "biuf" or \
            (a < b and (not x.shape or x.shape[-1] != b // a)):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"cannot bitcast {x.dtype} {list(x.shape)} to "
                                 f"{out.dtype}")
    if out.shape != want:
        raise ShapeError(f"node {node.index} ({node.op}): {x.dtype} {list(x.shape)} as {out.dtype} is "
                         f"{list(want)}, but the output is {list(out.shape)}")

    def run() -> None:
        np.copyto(out, np.ascontiguousarray(x).view(out.dtype).reshape(out.shape))
    return run
