"""Data movement without arithmetic (any dtype, NHWC): RESHAPE and friends, CONCATENATION,
PACK, DEPTH_TO_SPACE, SPACE_TO_DEPTH; and 8-bit CONCATENATION that requantizes inputs
(``quantized="exact"``). Where the memory plan made a RESHAPE's output or a
CONCATENATION's inputs views (graph.fusion's views rewrite), the bytes are already in place
and nothing is dispatched for them."""

from __future__ import annotations

import dataclasses

import numpy as np

from gpulite.backends.kernels import register_case, register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.integer import per_tensor, words_program
from gpulite.backends.webgpu.kernels.movement import copy_program, move_program
from gpulite.backends.webgpu.kernels.qmath import load_fn, qrange
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op


def _reshape(node: Node, ctx: GpuContext) -> list[Program]:
    # NHWC is dense row-major, so a reshape moves no element. Where the memory plan gave the
    # output its input's bytes (a view: graph.views, the fusion's views rewrite) there is
    # nothing to do, no dispatch; otherwise (an eager op, a graph input) it is a copy.
    x, out = ctx.input(0), ctx.output(0)
    ctx.element_bytes(x, out)
    ctx.require_same_quant()
    if x.size != out.size:
        raise ctx.unsupported(f"input {x.shape} and output {out.shape} differ in size")
    if x.offset == out.offset:
        return []
    return [copy_program(f"{node.op.lower()} {x.shape}->{out.shape}", x, out)]


for _op in (Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS):
    register_kernel(_op, "webgpu", _reshape)


@register_kernel(Op.CONCATENATION, "webgpu")
def concatenation(node: Node, ctx: GpuContext) -> list[Program]:
    out = ctx.output(0)
    ins = [ctx.input(k) for k in range(ctx.num_inputs)]
    eb = ctx.element_bytes(out, *ins)
    for k in range(len(ins)):
        ctx.require_same_quant(k)
    if node.activation and out.dtype != np.float32:
        raise ctx.unsupported(f"fused {node.activation} on {out.dtype}")
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
    return _concat(node, ctx, out, ins, axis, eb)


def _requantizing(node: Node, ctx: GpuContext) -> bool:
    """An 8-bit concatenation with an input quantized unlike the output, under quantized="exact"."""
    if ctx.quantized != "exact" or np.dtype(ctx.out_info(0).dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)):
        return False
    qs = [ctx.out_info(0).quant] + [ctx.in_info(k).quant for k in range(ctx.num_inputs)]
    if any(q is None or np.size(q.scale) != 1 for q in qs):
        return False
    return len({(float(q.scale[0]), int(q.zero_point[0])) for q in qs}) > 1


@register_case(Op.CONCATENATION, "webgpu", _requantizing)
def concatenation_requantizing(node: Node, ctx: GpuContext) -> Program:
    """8-bit inputs whose scale or zero point differ from the output's: each requantized as the
    cpu kernel does (TFLite's ConcatenationWithScaling, float32 then half away from zero), the
    others copied; one gather over the output's words (qconcat.wgsl)."""
    out = ctx.output(0)
    ins = [ctx.input(k) for k in range(ctx.num_inputs)]
    if any(x.dtype != out.dtype or x.layout != out.layout for x in ins):
        raise ctx.unsupported(f"dtypes {[str(x.dtype) for x in ins]} -> {out.dtype}")
    if node.activation or getattr(node.options, "fused_activation_function", 0):
        raise ctx.unsupported(f"fused activation on {out.dtype}")
    rank = len(out.shape)
    axis = (node.options or sg.ConcatenationOptions()).axis
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or any(len(x.shape) != rank for x in ins):
        raise ctx.unsupported(f"axis {axis} for ranks {[len(x.shape) for x in ins]} -> {rank}")
    s_out, zp = per_tensor(ctx, o=0)
    inv = np.float32(1.0) / np.float32(s_out)
    inner = int(np.prod(out.shape[axis + 1:], dtype=np.int64))
    table, start = [], 0
    for k, x in enumerate(ins):
        s_in, zp_in = per_tensor(ctx, i=k)
        scale = np.float32(s_in) * inv
        bias = np.float32(-zp_in) * scale
        table += [start, x.shape[axis] * inner, x.offset * 4, int((s_in, zp_in) != (s_out, zp)),
                  int(scale.view(np.uint32)), int(bias.view(np.uint32))]
        start += x.shape[axis] * inner
    lo, hi = qrange(out.dtype)
    params = [("row", "u32", max(start, 1)), ("n_in", "u32", len(ins)),
              ("table", "u32", ctx.upload(np.array(table, np.uint32)).offset), ("lo", "i32", lo - zp),
              ("hi", "i32", hi - zp), ("zp", "i32", zp), ("zero", "u32", 0)]
    return words_program(f"concatenation {out.dtype} {[x.shape for x in ins]}->{out.shape} axis {axis} requantizing",
                         "qconcat", out, params, LOAD=load_fn(out.dtype))


@register_kernel(Op.PACK, "webgpu")
def pack(node: Node, ctx: GpuContext) -> list[Program]:
    """PACK: a concatenation of the inputs, each given a size-1 axis at ``axis``."""
    out = ctx.output(0)
    ins = [ctx.input(k) for k in range(ctx.num_inputs)]
    eb = ctx.element_bytes(out, *ins)
    for k in range(len(ins)):
        ctx.require_same_quant(k)
    rank = len(out.shape)
    axis = getattr(node.options, "axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or any(x.shape != out.shape[:axis] + out.shape[axis + 1:] for x in ins):
        raise ctx.unsupported(f"packing {[x.shape for x in ins]} on axis {axis} does not give {out.shape}")
    ins = [dataclasses.replace(x, shape=(*x.shape[:axis], 1, *x.shape[axis:])) for x in ins]
    return _concat(node, ctx, out, ins, axis, eb)


def _concat(node: Node, ctx: GpuContext, out: TensorRef, ins: list[TensorRef], axis: int, eb: int) -> list[Program]:
    if eb < 4:
        return [_narrow_concat(ctx, out, ins, axis)]
    wpe = eb // 4  # words per element: int64 moves as two words
    outer = int(np.prod(out.shape[:axis], dtype=np.int64))
    inner = int(np.prod(out.shape[axis + 1:], dtype=np.int64)) * wpe
    word = "f32" if node.activation else "u32"
    programs, start = [], 0
    for x in ins:  # one dispatch per input, each writing its own columns of the output
        part = x.shape[axis] * inner
        if outer == 1 and not node.activation and x.offset == out.offset + start:
            start += part  # already in its slice (a view the memory plan placed there): nothing to move
            continue
        params = [("part", "u32", max(part, 1)), ("row", "u32", out.shape[axis] * inner), ("start", "u32", start),
                  ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        programs.append(make_program(f"concatenation part {x.shape}->{out.shape} axis {axis}", "concat_part",
                                     params, outer * part, act=node.activation, word=word))
        start += part
    return programs


def _narrow_concat(ctx: GpuContext, out, ins, axis: int) -> Program:
    """Elements narrower than a word: per-input dispatches would share output words, so one
    gather over the output picks each column's input from a table."""
    inner = int(np.prod(out.shape[axis + 1:], dtype=np.int64))
    per = 4 // out.dtype.itemsize  # elements per word; inputs start on word boundaries
    table, start = [], 0
    for x in ins:
        table += [start, x.shape[axis] * inner, x.offset * per]
        start += x.shape[axis] * inner
    params = [("row", "u32", max(start, 1)), ("n_in", "u32", len(ins)),
              ("table", "u32", ctx.upload(np.array(table, np.uint32)).offset)]
    zero = TensorRef(0, out.shape, out.dtype)  # src() returns absolute element indices
    return move_program(ctx, f"concatenation {[x.shape for x in ins]}->{out.shape} axis {axis}", "concat_gather",
                        zero, out, params)


def _block(node: Node, ctx: GpuContext, to_space: bool) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    block = node.options.block_size if node.options is not None else 0
    if len(x.shape) == 4 and block >= 1:
        n, h, w, c = x.shape
        want = (n, h * block, w * block, c // block**2) if to_space else (n, h // block, w // block, c * block**2)
    if len(x.shape) != 4 or block < 1 or out.shape != want:
        raise ctx.unsupported(f"block {block} for {x.shape} -> {out.shape}")
    _, ih, iw, ic = x.shape
    _, oh, ow, oc = out.shape
    params = [("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", ic), ("out_h", "u32", oh),
              ("out_w", "u32", ow), ("out_c", "u32", oc), ("block", "u32", block)]
    kind = "depth_to_space" if to_space else "space_to_depth"
    return move_program(ctx, f"{kind} {x.shape}->{out.shape}", kind, x, out, params)


register_kernel(Op.DEPTH_TO_SPACE, "webgpu", lambda node, ctx: _block(node, ctx, True))
register_kernel(Op.SPACE_TO_DEPTH, "webgpu", lambda node, ctx: _block(node, ctx, False))
