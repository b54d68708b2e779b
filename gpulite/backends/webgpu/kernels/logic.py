"""Comparisons (float32, int32; bool for EQUAL / NOT_EQUAL), LOGICAL_AND / OR / NOT, SELECT /
SELECT_V2 (any 1-, 4- or 8-byte dtype), CAST (float32, int32, bool, 8/16-bit ints, int64 from
and int64 to int32) and ONE_HOT as elementwise maps.

Bool tensors are stored as the host arena stores them, one byte per element (0 or 1), packed
four to a u32 word on the GPU; kernels that write them build a whole word per thread
(:mod:`.mapping`). 8/16-bit integer comparisons are :mod:`.qbinary`'s (LiteRT rescales 8-bit ones in
fixed point; under ``quantized="float"`` the graph rewrite makes quantized ones float32 first).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.mapping import kind, map_program
from gpulite.backends.webgpu.program import Program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

COMPARISONS = {Op.EQUAL: "v0 == v1", Op.NOT_EQUAL: "v0 != v1", Op.LESS: "v0 < v1", Op.LESS_EQUAL: "v0 <= v1",
               Op.GREATER: "v0 > v1", Op.GREATER_EQUAL: "v0 >= v1"}
LOGICAL = {Op.LOGICAL_AND: "v0 && v1", Op.LOGICAL_OR: "v0 || v1", Op.LOGICAL_NOT: "!v0"}
_BOOL = np.dtype(np.bool_)


def _inputs(node: Node, ctx: GpuContext, n: int) -> list[TensorRef]:
    if ctx.num_inputs != n or len(node.outputs) != 1 or not all(ctx.has_input(i) for i in range(n)):
        raise ctx.unsupported(f"expected {n} inputs and 1 output")
    return [ctx.input(i) for i in range(n)]


def _comparison(expr: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        a, b = _inputs(node, ctx, 2)
        out = ctx.output(0)
        ka = kind(a.dtype)
        if a.dtype != b.dtype or ka is None or out.dtype != _BOOL or (ka == "bool" and "=" not in expr):
            raise ctx.unsupported(f"{a.dtype}, {b.dtype} -> {out.dtype} (float32, int32; bool for (NOT_)EQUAL)")
        return map_program(ctx, f"{node.op.lower()} {a.shape}x{b.shape}", [(a, ka), (b, ka)], out, "bool", expr)
    return factory


def _logical(expr: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        refs = _inputs(node, ctx, 2 if "v1" in expr else 1)
        out = ctx.output(0)
        if any(r.dtype != _BOOL for r in (*refs, out)):
            raise ctx.unsupported("bool tensors only")
        return map_program(ctx, f"{node.op.lower()} {out.shape}", [(r, "bool") for r in refs], out, "bool", expr)
    return factory


for _op, _expr in COMPARISONS.items():
    register_kernel(_op, "webgpu", _comparison(_expr))
for _op, _expr in LOGICAL.items():
    register_kernel(_op, "webgpu", _logical(_expr))


def _select(node: Node, ctx: GpuContext) -> Program:
    c, x, y = _inputs(node, ctx, 3)
    out = ctx.output(0)
    k = kind(out.dtype, raw=True)
    if c.dtype != _BOOL or not (x.dtype == y.dtype == out.dtype) or k is None:
        raise ctx.unsupported(f"{c.dtype}, {x.dtype}, {y.dtype} -> {out.dtype} (bool condition, one dtype)")
    ctx.require_same_quant(1)
    ctx.require_same_quant(2)
    if node.op == Op.SELECT and len(c.shape) == 1 and len(x.shape) > 1:
        # TFLite's SELECT: a rank-1 condition picks whole rows of x / y.
        c = TensorRef(c.offset, c.shape + (1,) * (len(x.shape) - 1), c.dtype)
    if node.op == Op.SELECT and not (x.shape == y.shape == out.shape):
        raise ctx.unsupported(f"SELECT of {x.shape} and {y.shape}")
    return map_program(ctx, f"{node.op.lower()} {out.shape} {out.dtype}", [(c, "bool"), (x, k), (y, k)], out, k,
                       "select(v2, v1, v0)")


register_kernel(Op.SELECT, "webgpu", _select)
register_kernel(Op.SELECT_V2, "webgpu", _select)

# CAST: how each source dtype is read (its map load kind and WGSL value type) ...
_CAST_IN = {np.dtype(np.float32): ("f32", "f"), np.dtype(np.int32): ("i32", "i"), np.dtype(np.bool_): ("bool", "b"),
            np.dtype(np.int8): ("i8", "i"), np.dtype(np.uint8): ("u8n", "i"), np.dtype(np.int16): ("i16", "i"),
            np.dtype(np.int64): ("i64lo", "i")}
# ... and (value type, output dtype) -> (store kind, expression of v0). float -> int truncates
# toward zero as C's static_cast (WGSL clamps where C is undefined); narrow outputs keep the low
# bits; int64 outputs are built a word (h) at a time.
_CAST_OUT = {
    ("f", np.dtype(np.float32)): ("f32", "v0"), ("i", np.dtype(np.float32)): ("f32", "f32(v0)"),
    ("b", np.dtype(np.float32)): ("f32", "select(0.0, 1.0, v0)"),
    ("f", np.dtype(np.int32)): ("i32", "i32(v0)"), ("i", np.dtype(np.int32)): ("i32", "v0"),
    ("b", np.dtype(np.int32)): ("i32", "select(0, 1, v0)"),
    ("f", np.dtype(np.bool_)): ("bool", "v0 != 0.0"), ("i", np.dtype(np.bool_)): ("bool", "v0 != 0"),
    ("b", np.dtype(np.bool_)): ("bool", "v0"),
    **{(t, np.dtype(d)): ("u8", e) for d in (np.int8, np.uint8) for t, e in (
        ("f", "bitcast<u32>(i32(v0))"), ("i", "bitcast<u32>(v0)"), ("b", "select(0u, 1u, v0)"))},
    ("f", np.dtype(np.int64)): ("u64", "f32_to_i64(v0, h)"),
    ("i", np.dtype(np.int64)): ("u64", "select(bitcast<u32>(v0 >> 31u), bitcast<u32>(v0), h == 0u)"),
    ("b", np.dtype(np.int64)): ("u64", "select(0u, select(0u, 1u, v0), h == 0u)"),
}


@register_kernel(Op.CAST, "webgpu")
def cast(node: Node, ctx: GpuContext) -> Program:
    (x,) = _inputs(node, ctx, 1)
    out = ctx.output(0)  # a quantized tensor's codes are cast, scales ignored, as LiteRT's cast.cc
    load = _CAST_IN.get(x.dtype)
    store = _CAST_OUT.get((load[1], out.dtype)) if load is not None else None
    if load is None or store is None or x.shape != out.shape or (x.dtype == np.int64 and out.dtype != np.int32):
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape} (float32, int32, bool, 8/16-bit "
                              "ints; int64 to int32)")
    return map_program(ctx, f"cast {x.dtype}->{out.dtype} {x.shape}", [(x, load[0])], out, store[0], store[1])


@register_kernel(Op.ONE_HOT, "webgpu")
def one_hot(node: Node, ctx: GpuContext) -> Program:
    """``out = select(off, on, index == j)``: the indices get a size-1 axis at ``axis`` and meet
    a constant ``0 .. depth-1`` along it, both broadcast by the map (an index outside
    ``[0, depth)`` matches nothing: all off, as LiteRT)."""
    idx, on, off, out = ctx.input(0), ctx.input(2), ctx.input(3), ctx.output(0)
    depth_v = ctx.const(1)
    k = kind(out.dtype, raw=True)
    if idx.dtype != np.int32 or depth_v is None or k is None or on.dtype != out.dtype or off.dtype != out.dtype:
        raise ctx.unsupported(f"indices {idx.dtype}, values {on.dtype}/{off.dtype} -> {out.dtype} "
                              "(int32 indices, constant depth)")
    rank = len(out.shape)
    axis = getattr(node.options, "axis", -1)
    axis = axis + rank if axis < 0 else axis
    depth = int(np.asarray(depth_v).reshape(-1)[0])
    if not 0 <= axis < rank or out.shape != (*idx.shape[:axis], depth, *idx.shape[axis:]):
        raise ctx.unsupported(f"one-hot of {idx.shape} with depth {depth} on axis {axis} is not {out.shape}")
    iota = ctx.upload(np.arange(depth, dtype=np.int32).reshape((depth,) + (1,) * (rank - 1 - axis)))
    idx = TensorRef(idx.offset, (*idx.shape[:axis], 1, *idx.shape[axis:]), idx.dtype)
    return map_program(ctx, f"one_hot {idx.shape} depth {depth}", [(idx, "i32"), (iota, "i32"), (on, k), (off, k)],
                       out, k, "select(v3, v2, v0 == v1)")
