"""ZEROS_LIKE (float32, int32, int64): zero words over the output, whatever the dtype; FILL (any
1-, 2-, 4- or 8-byte dtype): the value tensor's element, read at run time; SHAPE and RANK (int32,
int64) and RANGE of constants (float32 too): known when the plan is made (a plan has static
shapes; a resize compiles a new one)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.movement import copy_program, move_program, words
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


def _known(node: Node, ctx: GpuContext, value: np.ndarray, dtypes: tuple = (np.int32, np.int64)) -> Program:
    """An output known when the plan is made (shapes are static per plan): upload, then copy."""
    out = ctx.output(0)
    if out.dtype not in [np.dtype(d) for d in dtypes] or out.size != value.size:
        raise ctx.unsupported(f"{out.dtype} output of {out.size} elements for {value.size} values")
    src = ctx.upload(value.astype(out.dtype).reshape(out.shape))
    return copy_program(f"{node.op.lower()} {value.tolist()}", src, out)


@register_kernel(Op.SHAPE, "webgpu")
def shape(node: Node, ctx: GpuContext) -> Program:
    return _known(node, ctx, np.array(ctx.in_info(0).shape, np.int64))


@register_kernel(Op.RANK, "webgpu")
def rank(node: Node, ctx: GpuContext) -> Program:
    return _known(node, ctx, np.array(len(ctx.in_info(0).shape), np.int64))


@register_kernel(Op.RANGE, "webgpu")
def range_(node: Node, ctx: GpuContext) -> Program:
    """RANGE of constant start, limit and delta, accumulated on the host as range.cc does (run-time
    operands decline: the CPU kernel checks the count against the planned size at invoke)."""
    consts = [ctx.const(i) for i in range(3)]
    out = ctx.output(0)
    if any(c is None or c.dtype != out.dtype for c in consts):
        raise ctx.unsupported("start, limit and delta computed at run time (or of another dtype than the output)")
    start, _, delta = (np.asarray(c).reshape(()) for c in consts)
    steps = np.full(out.shape, delta, out.dtype)
    if steps.size:
        steps[0] = start
    return _known(node, ctx, np.add.accumulate(steps, dtype=out.dtype), (np.float32, np.int32, np.int64))
