"""Integer unary ops as a table of codes: LOGISTIC, TANH, GELU, HARD_SWISH, ELU, LEAKY_RELU, EXP, LOG,
SQRT, RSQRT, ABS, NEG, the RELU family and integer -> integer QUANTIZE on int8, uint8 and int16.

An 8-bit input has 256 codes and an int16 one 65,536, so the output code of every input code
is computed once, at load, by **running the CPU backend's own kernel** for the node (its op,
options and quantization) on a 1-D input holding every code (:func:`code_table`): the GPU
kernel is then a lookup, bit-equal to the CPU kernel (and so to LiteRT) by construction,
whatever arithmetic the op does. LiteRT computes most of these by table too.

One position dependence exists: LiteRT's 8-bit NEON loops (8-bit requantizing QUANTIZE) leave
the last ``size % 16`` elements to a scalar loop that rounds differently. For an 8-bit input
whose size is no multiple of 16 the CPU kernel is also run on inputs of that remainder's
length, all of whose elements are in the tail, and a second table serves the last elements
when it differs.

An op whose LiteRT kernel fails the invoke on some input codes (quantized RSQRT and SQRT below the
input's zero point: ``math_ops.input_domain``) is tabulated on the codes it takes (the others stand in for the least
of those), and the kernel flags the codes below it in a sticky check's two words
(``GpuArena.add_check``: how many, and how far below the least went, by ``atomicAdd`` /
``atomicMax``), read with the outputs: ``invoke`` then raises the CPU kernel's error.

Quantized nodes take this path under ``quantized="exact"`` only (under ``"float"`` they are
computed in float32); unquantized 8/16-bit integer ones (int16 ABS, int8 NEG) in both modes.
Tables live among the arena's constants as packed output codes (4 int8 or 2 int16 per word),
indexed by the input code's bits; a thread builds a whole output word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.context import CpuContext
from gpulite.backends.cpu.kernels.math_ops import DOMAIN_MESSAGES, input_domain
from gpulite.backends.kernels import declare_int8, get_kernel, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.movement import words
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.errors import GpuliteError
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.model.opdefs import Op

TABLE_OPS = (Op.LOGISTIC, Op.TANH, Op.GELU, Op.HARD_SWISH, Op.ELU, Op.LEAKY_RELU, Op.EXP, Op.LOG, Op.SQRT,
             Op.RSQRT, Op.ABS, Op.NEG, Op.RELU, Op.RELU6, Op.RELU_N1_TO_1, Op.RELU_0_TO_1, Op.QUANTIZE)
NARROW = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
# LiteRT's 8-bit NEON loops run blocks of 16 and leave the rest to a scalar loop.
NEON_BLOCK = 16


def _quantized(t: TensorInfo) -> bool:
    return t.quant is not None and bool(np.size(t.quant.scale))


def applies(node: Node, ctx: GpuContext) -> bool:
    """A one-input node reading and writing 8/16-bit integers (quantized ones under ``"exact"``)."""
    if len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] < 0 or node.epilogue or node.prelu_alpha:
        return False
    ii, oi = ctx.in_info(0), ctx.out_info(0)
    if ii.dtype not in NARROW or oi.dtype not in NARROW:
        return False
    return ctx.quantized == "exact" or not (_quantized(ii) or _quantized(oi))


def cpu_kernel(node: Node, ctx: GpuContext, shapes: list[tuple[int, ...]],
               infos: list[TensorInfo] | None = None) -> tuple[list[np.ndarray], object]:
    """The CPU kernel of ``node`` (its op, options, activation, dtypes and quantization) compiled
    for inputs and output of ``shapes`` (the output's last): ``(input arrays, run)``, where
    ``run()`` returns the output for what the input arrays hold. ``infos``: the tensors whose
    dtypes and quantization those have (default: ``ctx``'s node's inputs, then its output). The
    unsupported error when the CPU kernel refuses the node (the node then runs there and fails
    as on the cpu)."""
    if infos is None:
        infos = [ctx.in_info(k) for k in range(len(shapes) - 1)] + [ctx.out_info(0)]
    tensors = [dataclasses.replace(t, index=k, shape=tuple(sh), shape_signature=tuple(sh), const=None, bounded=False)
               for k, (t, sh) in enumerate(zip(infos, shapes, strict=True))]
    ins, out = tuple(range(len(shapes) - 1)), len(shapes) - 1
    one = dataclasses.replace(node, inputs=ins, outputs=(out,))
    arrays = {t.index: np.zeros(t.shape, t.dtype) for t in tensors}
    factory = get_kernel(node.op, "cpu")
    if factory is None:
        raise ctx.unsupported("the cpu backend has no kernel for it")
    try:
        step = factory(one, CpuContext(Graph(tensors, [one], ins, (out,)), one, arrays, 1))
    except GpuliteError as e:  # the cpu kernel refuses the node: so does this one
        raise ctx.unsupported(f"the cpu kernel refuses it ({e})") from None

    def run() -> np.ndarray:
        step()
        return arrays[out].copy()
    return [arrays[k] for k in ins], run


def domain(node: Node, ctx: GpuContext) -> tuple[int, Callable[[int, int, int], Exception]] | None:
    """The CPU kernel's ``(least input code, error)`` for a quantized RSQRT or SQRT (module docstring)."""
    ii = ctx.in_info(0)
    return input_domain(node, ii) if node.op in DOMAIN_MESSAGES and _quantized(ii) else None


def domain_check(ctx: GpuContext, least: int, error: Callable[[int, int, int], Exception], size: int) -> int:
    """A sticky check's two words (module docstring) for an input of ``size`` codes whose least
    valid code is ``least``: the kernel adds the count of codes below it to the first and raises
    the second to how far below ``least`` they went; the invoke then raises ``error``. Returns
    the words' offset in u32 words."""
    def decode(w: np.ndarray) -> Exception | None:
        return None if w[0] == 0 else error(int(w[0]), size, least - int(w[1]))
    return ctx.arena.add_check(2, decode, sticky=True).offset // 4


def code_table(node: Node, ctx: GpuContext, size: int,
               least: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(table, tail)``: the output code of every input code, indexed by the code's bits, from the
    CPU kernel (module docstring), codes below ``least`` (which the kernel refuses) standing in
    for ``least``; ``tail`` is the table for the last ``size % 16`` elements of an 8-bit input
    where it differs, else None."""
    src = ctx.in_info(0).dtype
    bits = np.dtype(f"u{src.itemsize}")
    info = np.iinfo(src)
    codes = np.arange(info.min, info.max + 1).astype(src)  # a multiple of 16 long: no tail
    taken = codes if least is None else np.maximum(codes, least).astype(src)
    (x,), run = cpu_kernel(node, ctx, [codes.shape, codes.shape])
    x[:] = taken
    order = codes.view(bits)

    def by_bits(out: np.ndarray) -> np.ndarray:
        t = np.empty_like(out)
        t[order] = out
        return t
    table = by_bits(run())
    rest = size % NEON_BLOCK
    if src.itemsize != 1 or rest == 0:
        return table, None
    (x,), run = cpu_kernel(node, ctx, [(rest,), (rest,)])
    tail = np.empty(codes.size, table.dtype)
    for start in range(0, codes.size, rest):
        chunk = np.resize(taken[start:start + rest], rest)
        x[:] = chunk
        tail[start:start + rest] = run()[:codes.size - start]
    tail = by_bits(tail)
    return table, None if np.array_equal(tail, table) else tail


def table_kernel(node: Node, ctx: GpuContext) -> Program:
    """``out[e] = table[bits of x[e]]`` (the tail table for the last elements where LiteRT's
    differs); codes below a RSQRT's or SQRT's least flagged in a sticky check (module docstring)."""
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape:
        raise ctx.unsupported(f"input {x.shape} and output {out.shape} differ")
    dom = domain(node, ctx)
    table, tail = code_table(node, ctx, out.size, None if dom is None else dom[0])
    n = table.size
    stored = ctx.upload(table if tail is None else np.concatenate([table, tail]))  # packed codes
    body = out.size - (0 if tail is None else out.size % NEON_BLOCK)
    in_bits, out_bits = 8 * x.dtype.itemsize, 8 * out.dtype.itemsize
    lowest = int(np.iinfo(x.dtype).min)
    flip = -lowest  # bits ^ flip: a code's rank from the dtype's least (0 for unsigned dtypes)
    least_rank, check_off = 0, 0  # rank 0: no code lies below, nothing is flagged
    if dom is not None:
        least_rank = dom[0] - lowest
        check_off = domain_check(ctx, *dom, x.size)
    params = [("elems", "u32", out.size), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
              ("t_off", "u32", stored.offset), ("body", "u32", body), ("tail", "u32", n),
              ("flip", "u32", flip), ("least_rank", "u32", least_rank), ("check_off", "u32", check_off)]
    return make_program(f"{node.op.lower()} table {x.dtype}->{out.dtype} {x.shape}", "code_table", params,
                        words(out), word="u32", atomics=True, IN_PER=str(32 // in_bits), IN_BITS=str(in_bits),
                        OUT_PER=str(32 // out_bits), OUT_BITS=str(out_bits))


for _op in TABLE_OPS:
    register_case(_op, "webgpu", applies)(table_kernel)
declare_int8("webgpu", *TABLE_OPS)
