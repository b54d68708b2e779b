"""ZEROS_LIKE (float32, int32, int64): zero words over the output, whatever the dtype; FILL (any
1-, 2-, 4- or 8-byte dtype): the value tensor's element, read at run time."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.movement import move_program, words
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_kernel(Op.ZEROS_LIKE, "webgpu")
def zeros_like(node: Node, ctx: GpuContext) -> Program:
    if ctx.num_inputs != 1 or not ctx.has_input(0) or len(node.outputs) != 1:
        raise ctx.unsupported("expected 1 input and 1 output")
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_dtypes((x, out), (np.float32, np.int32, np.int64), "ZEROS_LIKE")
    if x.dtype != out.dtype or x.shape != out.shape:
        raise ctx.unsupported(f"input {x.shape} {x.dtype} but output {out.shape} {out.dtype}")
    # The unary driver with a constant: every u32 word of the output (2 per int64) becomes 0.
    params = [("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"zeros_like {out.shape}", "unary", params, words(out), word="u32", OP="0u")


@register_kernel(Op.FILL, "webgpu")
def fill(node: Node, ctx: GpuContext) -> Program:
    value, out = ctx.input(1), ctx.output(0)
    if ctx.const(0) is None:  # the CPU kernel checks run-time dims against the planned shape
        raise ctx.unsupported("dims computed at run time")
    if value.size != 1 or value.dtype != out.dtype:
        raise ctx.unsupported(f"value of shape {value.shape} {value.dtype} for a {out.dtype} output")
    ctx.require_same_quant(1)
    return move_program(ctx, f"fill {out.shape} {out.dtype}", "fill_map", value, out, [], value)
