"""Data movement without arithmetic (float32, NHWC): RESHAPE and friends, CONCATENATION,
DEPTH_TO_SPACE."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.activations import copy_program
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg


def _reshape(node: Node, ctx: GpuContext) -> Program:
    # NHWC is dense row-major, so a reshape is a copy. (An alias would need the memory plan to
    # give input and output one range; the copy keeps the plan backend-independent.)
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.size != out.size:
        raise ctx.unsupported(f"input {x.shape} and output {out.shape} differ in size")
    return copy_program(f"{node.op.lower()} {x.shape}->{out.shape}", x.offset, out.offset, out.size)


for _op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
    register_kernel(_op, "webgpu", _reshape)


@register_kernel("CONCATENATION", "webgpu")
def concatenation(node: Node, ctx: GpuContext) -> list[Program]:
    out = ctx.output(0)
    ins = [ctx.input(k) for k in range(ctx.num_inputs)]
    ctx.require_f32(out, *ins)
    # LiteRT ignores an activation declared in CONCATENATION's own options, so there is no
    # reference for it: decline (as the CPU kernel does). node.activation set by gpulite's
    # fusion pass (a following RELU node) is applied.
    if getattr(node.options, "fused_activation_function", 0):
        raise ctx.unsupported("fused activation declared in the model's concatenation options")
    rank = len(out.shape)
    axis = (node.options or sg.ConcatenationOptions()).axis
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or any(len(x.shape) != rank for x in ins):
        raise ctx.unsupported(f"axis {axis} for ranks {[len(x.shape) for x in ins]} -> {rank}")
    outer = int(np.prod(out.shape[:axis], dtype=np.int64))
    inner = int(np.prod(out.shape[axis + 1:], dtype=np.int64))
    programs, start = [], 0
    for x in ins:  # one dispatch per input, each writing its own columns of the output
        part = x.shape[axis] * inner
        params = [("part", "u32", max(part, 1)), ("row", "u32", out.shape[axis] * inner), ("start", "u32", start),
                  ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        programs.append(make_program(f"concatenation part {x.shape}->{out.shape} axis {axis}", "concat_part",
                                     params, outer * part, act=node.activation))
        start += part
    return programs


@register_kernel("DEPTH_TO_SPACE", "webgpu")
def depth_to_space(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    block = (node.options or sg.DepthToSpaceOptions()).block_size
    if len(x.shape) != 4 or block < 1 or out.shape != (x.shape[0], x.shape[1] * block, x.shape[2] * block,
                                                       x.shape[3] // (block * block)):
        raise ctx.unsupported(f"block {block} for {x.shape} -> {out.shape}")
    _, ih, iw, ic = x.shape
    _, oh, ow, oc = out.shape
    params = [("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", ic), ("out_h", "u32", oh),
              ("out_w", "u32", ow), ("out_c", "u32", oc), ("block", "u32", block),
              ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"depth_to_space {x.shape}->{out.shape}", "depth_to_space", params, out.size)
