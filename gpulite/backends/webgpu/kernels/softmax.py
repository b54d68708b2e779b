"""SOFTMAX (beta), L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION over the last axis (float32)."""

from __future__ import annotations

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_kernel(Op.SOFTMAX, "webgpu")
def softmax(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape or not x.shape or x.shape[-1] == 0:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape}")
    depth = x.shape[-1]
    # The output may share no memory with the input (the kernel writes exps before scaling),
    # which the memory plan guarantees: an op's output never aliases its live input.
    params = [("depth", "u32", depth), ("beta", "f32", float(getattr(node.options, "beta", 1.0))),
              ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"softmax {x.shape}", "softmax", params, x.size // depth,
                        reduction_per_thread=depth)


@register_kernel(Op.L2_NORMALIZATION, "webgpu")
def l2_normalization(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape or not x.shape or x.shape[-1] == 0 or node.activation:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape}, activation {node.activation} (LiteRT takes none)")
    depth = x.shape[-1]
    params = [("depth", "u32", depth), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"l2_normalization {x.shape}", "l2_norm", params, x.size // depth,
                        reduction_per_thread=depth)


@register_kernel(Op.LOCAL_RESPONSE_NORMALIZATION, "webgpu")
def local_response_normalization(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape or len(x.shape) != 4:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape} (4-D, as LiteRT)")
    o = node.options
    params = [("depth", "u32", x.shape[-1]), ("radius", "i32", int(getattr(o, "radius", 0))),
              ("bias", "f32", float(getattr(o, "bias", 0.0))), ("alpha", "f32", float(getattr(o, "alpha", 0.0))),
              ("beta", "f32", float(getattr(o, "beta", 0.0))), ("x_off", "u32", x.offset),
              ("out_off", "u32", out.offset)]
    return make_program(f"local_response_normalization {x.shape}", "lrn", params, x.size)
