"""Elementwise binary ops with broadcasting (float32; int32 where TFLite has it): ADD, SUB,
MUL, DIV, PRELU, ... A constant float operand is stored as float16 in fp16 plans (math in f32)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.epilogue import finish, keep_fused
from gpulite.backends.webgpu.kernels.prelu import alpha_per_channel
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Graph, Node
from gpulite.model.opdefs import Op

# WGSL expressions of a and b; act() wraps them.
BINARY = {
    Op.ADD: "a + b",
    Op.SUB: "a - b",
    Op.MUL: "a * b",
    Op.DIV: "a / b",
    Op.MAXIMUM: "max(a, b)",
    Op.MINIMUM: "min(a, b)",
    Op.SQUARED_DIFFERENCE: "(a - b) * (a - b)",
    Op.PRELU: "select(a * b, a, a >= 0.0)",  # b is alpha
}

_INT_OPS = {Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM, Op.SQUARED_DIFFERENCE}


def broadcast_strides(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]
                      ) -> tuple[list[int], list[int], list[int]]:
    """Output dims and a's/b's word strides (0 where broadcast), with mergeable dims merged.

    Merging keeps the common cases (same shape, scalar, per-channel) at one or two dims, so
    ranks above 4 usually still fit the kernel's four.
    """
    rank = len(out)

    def strides(s: tuple[int, ...]) -> list[int]:
        s = (1,) * (rank - len(s)) + tuple(s)
        st, acc = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            st[d] = acc if s[d] != 1 else 0
            acc *= s[d]
        return st

    dims, sa, sb = [], [], []
    for n, x, y in zip(out, strides(a), strides(b), strict=True):
        if n == 1:
            continue
        if dims and sa[-1] == x * n and sb[-1] == y * n:  # previous dim continues this one
            dims[-1] *= n
            sa[-1], sb[-1] = x, y
        else:
            dims.append(n)
            sa.append(x)
            sb.append(y)
    return dims or [1], sa or [0], sb or [0]


def _ref_of(ctx: GpuContext, i: int) -> TensorRef:
    """Input i's dtype, shape and layout for checks, without storing the constant yet."""
    t = ctx.in_info(i)
    return TensorRef(0, tuple(t.shape), t.dtype)


def _operand(ctx: GpuContext, i: int, word: str) -> tuple[TensorRef, str]:
    """Input i and the WGSL function that reads it: ``wt`` for a float constant in an fp16 plan
    (stored as float16 by ``ctx.weight_input``), else ``ld`` (the arena word)."""
    if word == "f32" and ctx.weights != "f32" and ctx.const(i) is not None:
        return ctx.weight_input(i), "wt"
    return ctx.input(i), "ld"


def _binary(expr: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        # int32 runs the same expressions on an i32 view of the arena (wrapping, as TFLite's
        # int32 kernels in practice); DIV truncation and PRELU are float-only here.
        word = "i32" if ctx.in_info(0).dtype == np.int32 and node.op in _INT_OPS else "f32"
        ctx.require_dtypes((ctx.input(0) if ctx.const(0) is None else _ref_of(ctx, 0),
                            ctx.input(1) if ctx.const(1) is None else _ref_of(ctx, 1), ctx.output(0)),
                           (np.int32,) if word == "i32" else (np.float32,))
        ctx.require_quant_free(0, 1)
        # A constant float operand is a weight in fp16 plans (float16, read with wt).
        (a, load_a), (b, load_b) = _operand(ctx, 0, word), _operand(ctx, 1, word)
        out = ctx.output(0)
        try:
            bshape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise ctx.unsupported(f"shapes {a.shape} and {b.shape} do not broadcast") from None
        if tuple(bshape) != out.shape:
            raise ctx.unsupported(f"broadcast shape {bshape} is not the output shape {out.shape}")
        dims, sa, sb = broadcast_strides(a.shape, b.shape, out.shape)
        if len(dims) > 4:
            raise ctx.unsupported(f"broadcast of {a.shape} and {b.shape} needs {len(dims)} dims (kernel has 4)")
        pad = 4 - len(dims)
        extra, fin = finish(node, ctx) if word == "f32" else ([], {"FINISH": "return act(v);"})
        params = [
            ("shape", "vec4u", [1] * pad + dims), ("sa", "vec4u", [0] * pad + sa), ("sb", "vec4u", [0] * pad + sb),
            ("a_off", "u32", a.offset), ("b_off", "u32", b.offset), ("out_off", "u32", out.offset),
            ("channels", "u32", out.shape[-1] if out.shape else 1), *extra,
        ]
        return make_program(f"{node.op.lower()} {a.shape}x{b.shape}->{out.shape}", "binary", params, out.size,
                            act=node.activation, word=word, weights=ctx.weights if word == "f32" else "f32",
                            OP=expr, WORD_T=word, LOAD_A=load_a, LOAD_B=load_b, **fin)
    return keep_fused(factory)


def binary_fusable(g: Graph, node: Node) -> bool:
    """Whether the factory below runs ``node`` in float32 (so stores through ``finish``, with
    any epilogue): two float32 unquantized operands broadcasting to the output in <= 4 dims."""
    t = g.tensors
    if len(node.inputs) != 2 or min(node.inputs) < 0 or len(node.outputs) != 1:
        return False
    a, b, out = (t[i] for i in (*node.inputs, node.outputs[0]))
    try:
        ok = tuple(np.broadcast_shapes(a.shape, b.shape)) == tuple(out.shape)
    except ValueError:
        return False
    return (ok and all(v.dtype == np.float32 and v.quant is None for v in (a, b, out))
            and len(broadcast_strides(a.shape, b.shape, out.shape)[0]) <= 4)


def add_prelu_fusable(g: Graph, add: Node, prelu: Node) -> bool:
    """ADD -> PRELU (the residual blocks of the MediaPipe models): float32, broadcasting to the output."""
    t = g.tensors
    a, b, mid = (t[i] for i in (*add.inputs[:2], add.outputs[0]))
    try:
        ok = tuple(np.broadcast_shapes(a.shape, b.shape)) == tuple(mid.shape)
    except ValueError:
        return False
    return (ok and len(add.inputs) == 2 and all(v.dtype == np.float32 for v in (a, b, mid))
            and len(broadcast_strides(a.shape, b.shape, mid.shape)[0]) <= 4 and alpha_per_channel(g, prelu, mid.shape))


for _op, _expr in BINARY.items():
    register_kernel(_op, "webgpu", _binary(_expr))
