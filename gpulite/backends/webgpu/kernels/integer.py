"""Shared pieces of the WebGPU integer kernels (``quantized="exact"``): LiteRT's integer
arithmetic on int8/uint8/int16 codes, which live packed in the arena (4 or 2 per u32 word).
No op is registered here.

Each integer kernel is a :func:`~gpulite.backends.kernels.register_case` of its op that applies
under ``quantized="exact"`` to quantized inputs (:func:`exact_codes`); under ``"float"`` the
graph has no quantized tensors left where these ops run (:mod:`..quantized`). A kernel file
reads codes with ``qmath.wgsl`` (:mod:`.qmath`), computes LiteRT's float32 steps with
``qfloat.wgsl`` and writes codes through ``qwords.wgsl`` (one thread per output word,
:func:`words_program`); reductions pack their codes in their last dispatch
(:func:`~.reduce.row_programs`' ``codes``), or fold into one i32 per output in scratch that
:func:`pack_program` packs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.movement import words
from gpulite.backends.webgpu.kernels.qmath import load_fn
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node

CODES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def exact_codes(node: Node, ctx: GpuContext) -> bool:
    """Whether ``node`` is for an integer kernel: ``quantized="exact"`` and a quantized
    int8/uint8/int16 input 0 (the ``applies`` of the integer cases)."""
    if ctx.quantized != "exact" or not node.inputs:
        return False
    info = ctx.in_info(0)
    return np.dtype(info.dtype) in CODES and info.quant is not None and bool(np.size(info.quant.scale))


def exact_eight_bit(node: Node, ctx: GpuContext) -> bool:
    """:func:`exact_codes` for an int8/uint8 input 0 (ops LiteRT has no int16 kernel of)."""
    return exact_codes(node, ctx) and ctx.in_info(0).dtype.itemsize == 1


def load(dtype: np.dtype, off: str, e: str) -> str:
    """WGSL for the i32 code of element ``e`` of a ``dtype`` tensor starting at word ``off``."""
    return f"{load_fn(dtype)}({off}, {e})"


def per_tensor(ctx: GpuContext, i: int | None = None, o: int | None = None) -> tuple[float, int]:
    """(scale, zero point) of input ``i`` or output ``o``; declines anything but one scale."""
    info = ctx.in_info(i) if i is not None else ctx.out_info(o if o is not None else 0)
    q = info.quant
    if q is None or np.size(q.scale) != 1:
        raise ctx.unsupported(f"tensor {info.index} needs one scale (per-tensor quantization)")
    return float(np.asarray(q.scale).reshape(-1)[0]), int(np.asarray(q.zero_point).reshape(-1)[0])


def bounds(node: Node, ctx: GpuContext) -> tuple[int, int]:
    """The output's clamp range under the fused activation (LiteRT's CalculateActivationRangeQuantized)."""
    scale, zp = per_tensor(ctx, o=0)
    return node.activation.quantized_bounds(scale, zp, ctx.out_info(0).dtype)


def require_codes(ctx: GpuContext, *refs: TensorRef) -> None:
    for r in refs:
        if r.dtype not in CODES:
            raise ctx.unsupported(f"dtype {r.dtype} (the integer kernels take int8/uint8/int16)")


def words_program(name: str, source: str, out: TensorRef, params: list[tuple[str, str, Any]],
                  reduction_per_thread: int = 0, **subs: str) -> Program:
    """``source`` (defining ``out_code(e)``) driven by ``qwords.wgsl``: one thread per word of ``out``."""
    per = 4 // out.dtype.itemsize
    return make_program(name, (source, "qwords"), [*params, ("elems", "u32", out.size), ("out_off", "u32", out.offset)],
                        words(out), word="u32", PER=str(per), PUT="q_byte" if per == 4 else "q_half",
                        reduction_per_thread=reduction_per_thread, **subs)


def pack_program(name: str, src_off: int, out: TensorRef) -> Program:
    """Pack the i32 codes at word ``src_off`` (one per element, in range) into ``out`` (a
    reduction's last dispatch: it declares one element per output)."""
    return words_program(f"{name} pack", "qpack", out, [("src_off", "u32", src_off)], reduction_per_thread=1)
