"""BATCH_MATMUL (float32; adj_x / adj_y; batch dims broadcast, up to 4 after merging)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.elementwise import broadcast_strides
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


@register_kernel(Op.BATCH_MATMUL, "webgpu")
def batch_matmul(node: Node, ctx: GpuContext) -> Program:
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ctx.require_f32(a, b, out)
    adj_x, adj_y = bool(getattr(node.options, "adj_x", False)), bool(getattr(node.options, "adj_y", False))
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ctx.unsupported(f"ranks {len(a.shape)} and {len(b.shape)} (at least 2)")
    m, k = a.shape[-2:][::-1] if adj_x else a.shape[-2:]
    k2, n = b.shape[-2:][::-1] if adj_y else b.shape[-2:]
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise ctx.unsupported(f"batch dims of {a.shape} and {b.shape} do not broadcast") from None
    if k != k2 or out.shape != (*batch, m, n):
        raise ctx.unsupported(f"{a.shape} x {b.shape} (adj {adj_x}, {adj_y}) does not give {out.shape}")
    # Batch strides in matrices, scaled to words; dims merged where both operands allow.
    dims, sa, sb = broadcast_strides(a.shape[:-2], b.shape[:-2], batch)
    if len(dims) > 4:
        raise ctx.unsupported(f"{len(dims)} batch dims after merging (kernel has 4)")
    pad = 4 - len(dims)
    params = [
        ("batch", "vec4u", [1] * pad + dims), ("sa", "vec4u", [0] * pad + [s * m * k for s in sa]),
        ("sb", "vec4u", [0] * pad + [s * k * n for s in sb]),
        ("rows", "u32", m), ("cols", "u32", n), ("k", "u32", k),
        ("a_m", "u32", 1 if adj_x else k), ("a_k", "u32", m if adj_x else 1),
        ("b_k", "u32", 1 if adj_y else n), ("b_n", "u32", k if adj_y else 1),
        ("a_off", "u32", a.offset), ("b_off", "u32", b.offset), ("out_off", "u32", out.offset),
    ]
    return make_program(f"batch_matmul {a.shape}x{b.shape}->{out.shape}", "batch_matmul", params, out.size,
                        reduction_per_thread=k)
