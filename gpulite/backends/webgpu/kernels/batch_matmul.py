"""BATCH_MATMUL (float32; adj_x / adj_y; batch dims broadcast, up to 4 after merging) as a tiled
matrix product (kernels/gemm.py, gemm_bmm.wgsl)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels import gemm
from gpulite.backends.webgpu.kernels.elementwise import broadcast_strides
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def matrices(a: TensorRef, b: TensorRef, out: TensorRef, m: int, k: int, n: int, bias: TensorRef, *,
             adj_x: bool = False, adj_y: bool = False, dims: list[int] | None = None, sa: list[int] | None = None,
             sb: list[int] | None = None) -> list:
    """gemm_bmm.wgsl's params: A [m, k] (adj_x: [k, m]) and B [k, n] (adj_y: [n, k]) at their
    offsets; the output's batch dims ``dims`` with A's and B's strides in matrices (0 where
    broadcast); ``bias``, one value per column or a single one for every column (read as the
    sources' ``$BIAS`` says)."""
    dims, sa, sb = dims or [], sa or [], sb or []
    pad = 4 - len(dims)
    return [
        ("batch", "vec4u", [1] * pad + dims), ("sa", "vec4u", [0] * pad + [s * m * k for s in sa]),
        ("sb", "vec4u", [0] * pad + [s * k * n for s in sb]),
        ("a_m", "u32", 1 if adj_x else k), ("a_k", "u32", m if adj_x else 1),
        ("b_k", "u32", 1 if adj_y else n), ("b_n", "u32", k if adj_y else 1),
        ("a_off", "u32", a.offset), ("b_off", "u32", b.offset), ("out_off", "u32", out.offset),
        ("bias_off", "u32", bias.offset), ("bias_step", "u32", int(bias.size > 1)),
    ]


def dimensions(node: Node, ctx: GpuContext, a: TensorRef, b: TensorRef, out: TensorRef) -> tuple:
    """A rank >= 2 BATCH_MATMUL's checked ``(adj_x, adj_y, m, k, n, batch, dims, sa, sb)``: the
    output's batch dims ``batch``, merged where both operands allow into ``dims`` with A's and B's
    strides in matrices ``sa`` / ``sb`` (at most 4 dims, as the kernels have)."""
    adj_x, adj_y = bool(getattr(node.options, "adj_x", False)), bool(getattr(node.options, "adj_y", False))
    m, k = a.shape[-2:][::-1] if adj_x else a.shape[-2:]
    k2, n = b.shape[-2:][::-1] if adj_y else b.shape[-2:]
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise ctx.unsupported(f"batch dims of {a.shape} and {b.shape} do not broadcast") from None
    if k != k2 or out.shape != (*batch, m, n):
        raise ctx.unsupported(f"{a.shape} x {b.shape} (adj {adj_x}, {adj_y}) does not give {out.shape}")
    dims, sa, sb = broadcast_strides(a.shape[:-2], b.shape[:-2], batch)
    if len(dims) > 4:
        raise ctx.unsupported(f"{len(dims)} batch dims after merging (kernel has 4)")
    return adj_x, adj_y, m, k, n, batch, dims, sa, sb


@register_kernel(Op.BATCH_MATMUL, "webgpu")
def batch_matmul(node: Node, ctx: GpuContext) -> list[Program]:
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ctx.require_f32(a, b, out)
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ctx.unsupported(f"ranks {len(a.shape)} and {len(b.shape)} (at least 2)")
    adj_x, adj_y, m, k, n, batch, dims, sa, sb = dimensions(node, ctx, a, b, out)
    p = gemm.plan_for(ctx, m, n, k, int(np.prod(batch, dtype=np.int64)))
    params = matrices(a, b, out, m, k, n, ctx.upload(np.zeros(1, np.float32)), adj_x=adj_x, adj_y=adj_y,
                      dims=dims, sa=sa, sb=sb)
    return gemm.programs(ctx, f"batch_matmul {a.shape}x{b.shape}->{out.shape}", ("gemm_bmm",), p, params,
                         BIAS="ld", **vec_reads(a, b, k, n, adj_x, adj_y))


def vec_reads(a: TensorRef, b: TensorRef, k: int, n: int, adj_x: bool, adj_y: bool) -> dict[str, str]:
    """gemm_bmm.wgsl's $A_VEC / $B_VEC: whether A's rows run along k, and B's along the columns,
    in whole aligned vec4s (every matrix and row then starts on one)."""
    a_vec = not adj_x and k % 4 == 0 and a.offset % 4 == 0
    b_vec = not adj_y and n % 4 == 0 and b.offset % 4 == 0
    return {"A_VEC": str(a_vec).lower(), "B_VEC": str(b_vec).lower()}
