"""SOFTMAX (beta), LOG_SOFTMAX, L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION over the
last axis (float32). The first three share each row among cooperating threads
(``row_tree.wgsl``): a workgroup of 256 takes ``cols`` rows of ``split`` threads each."""

from __future__ import annotations

from typing import Any

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.reduce import ROW_GROUP, TARGET, _pow2, subgroups
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def row_program(ctx: GpuContext, name: str, source: str, x: TensorRef, out: TensorRef,
                extra: list[tuple[str, str, Any]]) -> Program:
    """One dispatch of a ``row_tree.wgsl`` kernel over the rows of ``x``'s last axis: ``split``
    threads per row (a power of two, so each folds about ``TARGET`` elements, at most 256),
    ``256 / split`` rows per workgroup."""
    depth = x.shape[-1]
    rows = x.size // depth
    split = min(ROW_GROUP, _pow2(-(-depth // TARGET)))
    cols = ROW_GROUP // split
    params = [("rows", "u32", rows), ("depth", "u32", depth), ("cols", "u32", cols), ("split", "u32", split),
              *extra, ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
    return make_program(f"{name} {x.shape} ({rows} rows, {split} threads each)", source, params, -(-rows // cols),
                        workgroup_size=ROW_GROUP, groups=True, subgroups=subgroups(ctx),
                        reduction_per_thread=-(-depth // split))


@register_kernel(Op.SOFTMAX, "webgpu")
def softmax(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape or not x.shape or x.shape[-1] == 0:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape}")
    # The output may share no memory with the input (the kernel reads the input again after
    # writing some outputs), which the memory plan guarantees: an op's output never aliases
    # its live input.
    return row_program(ctx, "softmax", "softmax", x, out, [("beta", "f32", float(getattr(node.options, "beta", 1.0)))])


@register_kernel(Op.LOG_SOFTMAX, "webgpu")
def log_softmax(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape or not x.shape or x.shape[-1] == 0:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape}")
    return row_program(ctx, "log_softmax", "log_softmax", x, out, [])


@register_kernel(Op.L2_NORMALIZATION, "webgpu")
def l2_normalization(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    if x.shape != out.shape or not x.shape or x.shape[-1] == 0 or node.activation:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape}, activation {node.activation} (LiteRT takes none)")
    return row_program(ctx, "l2_normalization", "l2_norm", x, out, [])


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
