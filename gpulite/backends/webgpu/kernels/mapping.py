"""Elementwise maps over operands of any element type (no op registered here).

:func:`map_program` builds one dispatch of ``map.wgsl``: output element ``e`` is a WGSL
expression over ``v0``, ``v1``, ``v2`` (inputs in the order given), each read at its
numpy-broadcast position. Operands and output are typed by *kind*:

========  =====================================  ==========================
kind      dtypes                                 WGSL value
========  =====================================  ==========================
f32       float32                                f32
i32       int32                                  i32
u32       any 4-byte dtype, moved bit for bit    u32
u64       any 8-byte dtype, moved bit for bit    u32 (one word of the two)
u8        any 1-byte dtype, moved bit for bit    u32 (the byte)
u16       any 2-byte dtype, moved bit for bit    u32 (the half word)
bool      bool (one byte each, as the host)      bool
========  =====================================  ==========================

1- and 2-byte outputs are built a whole word (4 or 2 elements) per thread, 8-byte ones a word per thread,
so no two threads write one word. Used by the comparisons, logic, SELECT, CAST and the float
math ops (``logic.py``, ``math_ops.py``).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.movement import words
from gpulite.backends.webgpu.program import Program, make_program

_TYPES = {"f32": "f32", "i32": "i32", "u32": "u32", "u64": "u32", "u8": "u32", "u16": "u32", "bool": "bool"}
_SIZES = {"f32": 4, "i32": 4, "u32": 4, "u64": 8, "u8": 1, "u16": 2, "bool": 1}
# Further operand kinds (read only): i8, u8n, i16 and i64lo give an int8 / uint8 / int16 / int64's
# low word as an i32 value (map.wgsl).


def kind(dtype: np.dtype, raw: bool = False) -> str | None:
    """The kind an operand of ``dtype`` is read as: its arithmetic type (float32, int32, bool),
    or with ``raw`` the bit pattern of its size; None when there is none."""
    dtype = np.dtype(dtype)
    if not raw:
        return {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.bool_): "bool"}.get(dtype)
    return {4: "u32", 8: "u64", 2: "u16", 1: "u8"}.get(dtype.itemsize) if dtype.kind in "biuf" else None


def broadcast(shapes: list[tuple[int, ...]], out: tuple[int, ...]) -> tuple[list[int], list[list[int]]] | None:
    """Output dims and each operand's element strides (0 where broadcast), dims merged where
    every operand continues; None when more than 4 dims remain."""
    rank = len(out)
    strides = []
    for s in shapes:
        s = (1,) * (rank - len(s)) + tuple(s)
        st, acc = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            st[d] = acc if s[d] != 1 else 0
            acc *= s[d]
        strides.append(st)
    dims: list[int] = []
    kept: list[list[int]] = [[] for _ in shapes]
    for d, n in enumerate(out):
        if n == 1:
            continue
        if dims and all(k[-1] == st[d] * n for k, st in zip(kept, strides, strict=True)):
            dims[-1] *= n
            for k, st in zip(kept, strides, strict=True):
                k[-1] = st[d]
        else:
            dims.append(n)
            for k, st in zip(kept, strides, strict=True):
                k.append(st[d])
    if len(dims) > 4:
        return None
    pad = 4 - len(dims)
    return [1] * pad + dims, [[0] * pad + k for k in kept]


def map_program(ctx: GpuContext, name: str, operands: list[tuple[TensorRef, str]], out: TensorRef, out_kind: str,
                expr: str) -> Program:
    """``out[e] = expr`` over ``operands`` (``(ref, kind)``, named ``v0``, ``v1``, ... in the
    expression); declines shapes that do not broadcast to ``out`` or need more than 4 dims."""
    try:
        shape = np.broadcast_shapes(*(r.shape for r, _ in operands))
    except ValueError:
        raise ctx.unsupported(f"shapes {[r.shape for r, _ in operands]} do not broadcast") from None
    if tuple(shape) != out.shape:
        raise ctx.unsupported(f"broadcast shape {tuple(shape)} is not the output shape {out.shape}")
    b = broadcast([r.shape for r, _ in operands], out.shape)
    if b is None:
        raise ctx.unsupported(f"broadcast of {[r.shape for r, _ in operands]} needs more than 4 dims")
    dims, strides = b
    params: list = [("shape", "vec4u", dims), ("elems", "u32", out.size), ("out_off", "u32", out.offset)]
    lets = []
    for k, ((ref, kd), st) in enumerate(zip(operands, strides, strict=True)):
        params += [(f"s{k}", "vec4u", st), (f"off{k}", "u32", ref.offset)]
        lets.append(f"    let v{k} = ld_{kd}(P.off{k}, dot(c, P.s{k}), h);")
    size = _SIZES[out_kind]
    if size in (1, 2):
        per, bits = 4 // size, 8 * size
        code = "select(0u, 1u, value(e, 0u))" if out_kind == "bool" else f"(value(e, 0u) & {hex((1 << bits) - 1)}u)"
        store = (f"    var w = 0u;\n    for (var k = 0u; k < {per}u; k++) {{\n        let e = i * {per}u + k;\n"
                 "        if (e >= P.elems) {\n            break;\n        }\n"
                 f"        w |= {code} << (k * {bits}u);\n    }}\n    buf[P.out_off + i] = w;")
    elif size == 8:
        store = "    buf[P.out_off + i] = bitcast<u32>(value(i / 2u, i % 2u));"
    else:
        store = "    buf[P.out_off + i] = bitcast<u32>(value(i, 0u));"
    return make_program(name, "map", params, words(out), word="u32", OUT_T=_TYPES[out_kind], LETS="\n".join(lets),
                        OP=expr, STORE=store)
