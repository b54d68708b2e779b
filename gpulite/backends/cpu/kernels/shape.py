"""RESHAPE, SQUEEZE, EXPAND_DIMS: the bytes do not move, so each is one copy.

The output is viewed with the input's shape once, in the factory, so ``run`` is a single
``np.copyto``. Quantized tensors just carry their codes across (TFLite does not rescale; for
EXPAND_DIMS it requires the output's quantization to be the input's: ``Operands.same_quant``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def _copy(node: Node, ctx: CpuContext, expected: tuple[int, ...]) -> Callable[[], None]:
    src, out = ctx.input(0), ctx.output(0)
    if tuple(out.shape) != tuple(expected):
        raise ShapeError(f"{layout.where(node)}output has shape {list(out.shape)}; the op gives {list(expected)}")
    if src.dtype != out.dtype:
        raise ShapeError(f"{layout.where(node)}input dtype {src.dtype} differs from output dtype {out.dtype}")
    dst = out.reshape(src.shape)  # a view: arena tensors are contiguous

    def run() -> None:
        np.copyto(dst, src)
    return run


@register_kernel(Op.RESHAPE, "cpu")
def reshape(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy the input into the output; the target shape comes from the shape input or options."""
    has_shape = ctx.has_input(1)
    if has_shape and ctx.const(1) is None and not getattr(node.options, "new_shape", ()):
        # A run-time shape input: TFLite sizes the output at invoke; we keep the planned
        # shape, which must at least hold the input's elements.
        shape = ctx.out_info(0).shape
        if int(np.prod(shape)) != int(np.prod(ctx.in_info(0).shape)):
            raise ShapeError(f"{layout.where(node)}planned output {list(shape)} does not hold the input "
                             f"{list(ctx.in_info(0).shape)}")
    else:
        shape = layout.reshape_shape(node, ctx.in_info(0).shape, ctx.const(1) if has_shape else None, has_shape)
    return _copy(node, ctx, shape)


@register_kernel(Op.SQUEEZE, "cpu")
def squeeze(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy the input into the output with ``squeeze_dims`` (or all size-1 dims) dropped."""
    return _copy(node, ctx, layout.squeeze_shape(node, ctx.in_info(0).shape))


@register_kernel(Op.EXPAND_DIMS, "cpu")
def expand_dims(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy the input into the output with a size-1 dim inserted at the constant axis (one
    scale and zero point on both sides, as expand_dims.cc's Prepare requires: graph/validate.py)."""
    return _copy(node, ctx, layout.expand_dims_shape(node, ctx.in_info(0).shape, ctx.const(1)))
