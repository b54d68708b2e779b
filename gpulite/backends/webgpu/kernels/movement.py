"""Data movement programs shared by the layout kernels (no op registered here).

Moves are dtype-blind: ``buf`` is viewed as u32 words, so float32, int32, int64, int8, ...
move bit for bit. An op supplies an *index map*, a ``.wgsl`` file defining
``fn src(e: u32) -> u32`` (the input element that output element ``e`` copies, or ``NONE``
for padding), and :func:`move_program` pairs it with the driver for the element size:
``move_words`` (4- and 8-byte elements, one thread per word) or ``move_bytes`` (1- and
2-byte elements packed into words; one thread builds a whole word, so threads never race).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.program import Program, make_program


def words(ref: TensorRef) -> int:
    """u32 words covering ``ref`` (the last one may end in the tensor's alignment padding)."""
    return -(-ref.size * ref.dtype.itemsize // 4)


def copy_program(name: str, x: TensorRef, out: TensorRef) -> Program:
    """A plain word copy of any dtype (RESHAPE and other layout-only ops in NHWC)."""
    return make_program(name, "unary", [("x_off", "u32", x.offset), ("out_off", "u32", out.offset)], words(out),
                        word="u32", OP="x")


def move_program(ctx: GpuContext, name: str, index_map: str, x: TensorRef, out: TensorRef,
                 params: list[tuple[str, str, Any]], value: TensorRef | None = None, **subs: str) -> Program:
    """``out[e] = x[src(e)]`` (or ``value[0]`` where ``src(e)`` is NONE) with ``index_map``'s
    ``src``, its ``params`` and template ``subs``; declines dtypes of different sizes."""
    eb = ctx.element_bytes(x, out, *([value] if value is not None else []))
    tail = [("elems", "u32", out.size), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
            ("val_off", "u32", (value or x).offset)]
    if eb >= 4:
        return make_program(name, (index_map, "move_words"), params + tail, words(out), word="u32", WPE=str(eb // 4),
                            **subs)
    return make_program(name, (index_map, "move_bytes"), params + tail, words(out), word="u32",
                        PER=str(4 // eb), MASK="0xffu" if eb == 1 else "0xffffu", **subs)


def fill_value(ctx: GpuContext, value: Any, dtype: np.dtype) -> TensorRef:
    """A one-element constant of ``dtype`` (a pad value) in the arena."""
    return ctx.upload(np.array([value], dtype=dtype))


def strided_gather(ctx: GpuContext, name: str, x: TensorRef, out: TensorRef,
                   dims: list[tuple[int, int, int, int, int]], value: TensorRef | None = None) -> Program:
    """The ``gather4d`` index map for output dims ``(n, begin, step, in_size, in_stride)``:
    output coordinate ``c`` reads input coordinate ``begin + c * step`` (padding outside
    ``[0, in_size)``). Size-1 dims are folded into a base offset and runs of whole contiguous
    dims merged; up to 4 dims left take ``gather4d``, up to 8 ``gather8d`` (more: declined)."""
    base, kept = 0, []
    for n, b, s, m, t in dims:
        if n == 1 and 0 <= b < m:  # one in-range coordinate: a constant offset
            base += b * t
        else:
            kept.append((n, b, s, m, t))
    merged: list[tuple[int, int, int, int, int]] = []
    for d in kept:
        p = merged[-1] if merged else None
        if p and p[1:3] == d[1:3] == (0, 1) and p[0] == p[3] and d[0] == d[3] and p[4] == d[4] * d[3]:
            merged[-1] = (p[0] * d[0], 0, 1, p[3] * d[3], d[4])
        else:
            merged.append(d)
    if len(merged) > 8:
        raise ctx.unsupported(f"{len(merged)} dims after merging (the gather kernels take 8)")
    size = 4 if len(merged) <= 4 else 8
    merged = [(1, 0, 1, 1, 0)] * (size - len(merged)) + merged
    n, b, s, m, t = (list(col) for col in zip(*merged, strict=True))
    if size == 4:
        params = [("out_shape", "vec4u", n), ("in_shape", "vec4u", m), ("begin", "vec4i", b),
                  ("stride", "vec4i", s), ("in_strides", "vec4u", t), ("base", "u32", base)]
        return move_program(ctx, name, "gather4d", x, out, params, value)
    params = [(f"{field}_{half}", kind, col[k:k + 4]) for half, k in (("hi", 0), ("lo", 4))
              for field, kind, col in (("out", "vec4u", n), ("in", "vec4u", m), ("begin", "vec4i", b),
                                       ("stride", "vec4i", s), ("strides", "vec4u", t))]
    return move_program(ctx, name, "gather8d", x, out, [*params, ("base", "u32", base)], value)


def row_major_strides(shape: tuple[int, ...]) -> list[int]:
    return [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
