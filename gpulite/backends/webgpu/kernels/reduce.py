"""MEAN, SUM, REDUCE_MAX, REDUCE_MIN and REDUCE_PROD over any axes (float32 and int32), as
cooperating workgroups (:func:`row_programs`, shared with the global pools); REDUCE_ANY /
REDUCE_ALL (bool, one output per thread); CUMSUM."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.integer import pack_program
from gpulite.backends.webgpu.kernels.movement import words
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import FusedActivation, Op

_F_NEG_INF, _F_POS_INF = "bitcast<f32>(0xff800000u)", "bitcast<f32>(0x7f800000u)"
_I_MIN, _I_MAX = "i32(-2147483647 - 1)", "2147483647"
# op -> word -> (initial value, update of acc with v, result from acc and P.count).
# Integer MEAN truncates toward zero (WGSL's i32 division), as TFLite.
_KINDS = {
    Op.MEAN: {"f32": ("0.0", "acc + v", "acc / f32(P.total)"), "i32": ("0", "acc + v", "acc / i32(P.total)")},
    Op.SUM: {"f32": ("0.0", "acc + v", "acc"), "i32": ("0", "acc + v", "acc")},
    Op.REDUCE_MAX: {"f32": (_F_NEG_INF, "max(acc, v)", "acc"), "i32": (_I_MIN, "max(acc, v)", "acc")},
    Op.REDUCE_MIN: {"f32": (_F_POS_INF, "min(acc, v)", "acc"), "i32": (_I_MAX, "min(acc, v)", "acc")},
    Op.REDUCE_PROD: {"f32": ("1.0", "acc * v", "acc"), "i32": ("1", "acc * v", "acc")},
}
_WORDS = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32"}


def split_dims(shape: tuple[int, ...], axes: set[int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``(kept, reduced)`` lists of ``(size, stride)`` with size-1 dims dropped and neighbouring
    dims of the same kind merged (row-major neighbours are always contiguous)."""
    runs: list[list] = []  # [reduced?, size, stride]
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        n = shape[d]
        if n != 1:
            if runs and runs[-1][0] == (d in axes):
                runs[-1][1] *= n
            else:
                runs.append([d in axes, n, stride])
        stride *= n
    runs.reverse()
    return [(n, t) for red, n, t in runs if not red], [(n, t) for red, n, t in runs if red]


def _vec4(dims: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    dims = [(1, 0)] * (4 - len(dims)) + dims
    return [n for n, _ in dims], [t for _, t in dims]


ROW_GROUP = 256  # threads of a reduce_rows workgroup (its workgroup-memory tree is this long)
TARGET = 16  # elements one thread folds before more threads of its workgroup pay
# Several workgroups per output block (and a second dispatch folding their partials) only
# when one workgroup would leave more than this to a thread (a global pool of 128x128: 1024;
# of 64x64: 256, one dispatch): a dispatch more costs about what a workgroup folding this
# many per thread does, and it counts against the plan's dispatches per invoke. Never more
# than MAX_PER_THREAD (tests/webgpu/test_reduction_work.py).
SPLIT_ABOVE = 256
MAX_PER_THREAD = 1024


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def subgroups(ctx: GpuContext) -> bool:
    """Whether this node's trees may use subgroup shuffles (the device vouches for them)."""
    return bool(getattr(ctx.gdev, "subgroups", False))


def row_programs(ctx: GpuContext, name: str, x_off: int, out_off: int, kept: list[tuple[int, int]],
                 red: list[tuple[int, int]], *, word: str, init: str, update: str, finish: str,
                 act: FusedActivation = FusedActivation.NONE, total: int | None = None, load: str | None = None,
                 extra: list[tuple[str, str, Any]] = (), helpers: tuple[str, ...] = (),
                 codes: TensorRef | None = None) -> list[Program]:
    """Dispatches of a reduction of the elements at ``x_off`` into ``out_off`` (``reduce_rows.wgsl``).

    ``kept`` / ``reduced`` are :func:`split_dims`' runs (at most 4 each); ``update`` folds ``v``
    into ``acc`` (associative: the order is a tree), ``finish`` turns ``acc`` into the output
    (``P.total``: the element count of the whole reduction, ``total`` when given; ``extra``:
    more uniform fields for it; ``helpers``: WGSL files it calls, e.g. ``("qmath",)``). ``load``:
    WGSL reading element ``base + {ridx}`` of the input (a narrow code: qmath.wgsl's ``q_load_*``;
    default a word at ``x_off``). Outputs that
    are few with long reductions get several workgroups each and a second dispatch that folds
    their partials (in scratch memory), so no thread folds more than ``MAX_PER_THREAD``.
    ``codes``: the output is that int8/uint8/int16 tensor (``out_off`` its offset) and ``finish``
    gives i32 codes in its range; the last dispatch packs them into whole words (where its
    workgroups' outputs are whole words; else it writes one i32 per output to scratch and a
    pack dispatch follows, :func:`.integer.pack_program`).
    """
    outs = int(np.prod([n for n, _ in kept], dtype=np.int64))
    count = int(np.prod([n for n, _ in red], dtype=np.int64))
    total = count if total is None else total
    # Neighbouring threads should read neighbouring words: along the kept dims when their
    # innermost run is contiguous (a global pool's channels), else along the reduced ones.
    lanes_on_cols = bool(kept) and kept[-1][1] == 1
    need = _pow2(-(-count // TARGET))
    if lanes_on_cols:
        cols = min(_pow2(kept[-1][0]), 32)
        split = min(ROW_GROUP // cols, need)
        cols = ROW_GROUP // split
    else:
        split = min(ROW_GROUP, need)
        cols = ROW_GROUP // split
    blocks = -(-outs // cols)
    per = -(-count // split)
    chunks = min(-(-per // TARGET), max(1, 1024 // blocks)) if per > SPLIT_ABOVE and blocks < 256 else 1
    chunks = max(chunks, -(-per // MAX_PER_THREAD))
    per_word = 0 if codes is None else 4 // codes.dtype.itemsize
    pack_here = chunks == 1 and per_word and cols % per_word == 0
    dst = out_off if chunks == 1 and (codes is None or pack_here) else ctx.scratch((outs * chunks,)).offset
    (ks, kt), (rs, rt) = _vec4(kept), _vec4(red)
    params = [("kshape", "vec4u", ks), ("kstride", "vec4u", kt), ("rshape", "vec4u", rs), ("rstride", "vec4u", rt),
              ("count", "u32", count), ("total", "u32", total), ("outs", "u32", outs), ("cols", "u32", cols),
              ("split", "u32", split), ("chunks", "u32", chunks), ("lanes_on_cols", "u32", int(lanes_on_cols)),
              ("x_off", "u32", x_off), ("out_off", "u32", dst), *extra]
    ridx = "j * P.rstride.w" if len(red) <= 1 else "dot(coords4(j, P.rshape), P.rstride)"
    load = (load or "buf[P.x_off + {ridx}]").format(ridx=f"base + {ridx}")
    first = make_program(f"{name} ({outs} outputs of {count}: {blocks * chunks} groups of {cols}x{split})",
                         (*helpers, "reduce_rows"), params, blocks * chunks, act=act, word=word,
                         workgroup_size=ROW_GROUP, groups=True, subgroups=subgroups(ctx),
                         reduction_per_thread=-(-per // chunks), T=word,
                         INIT=init, REDUCE=update, FINISH=finish, LOAD=load, CODES=str(per_word if pack_here else 0))
    if chunks > 1:
        return [first, *row_programs(ctx, f"{name} partials", dst, out_off, [(outs, chunks)], [(chunks, 1)],
                                     word=word, init=init, update=update, finish=finish, act=act, total=total,
                                     extra=extra, helpers=helpers, codes=codes)]
    if codes is not None and not pack_here:
        return [first, pack_program(name, dst, codes)]
    return [first]


def reduction(ctx: GpuContext, x: TensorRef, out: TensorRef) -> tuple[set[int], list, list, int]:
    """``(axes, kept, reduced, count)`` of a reduction node of ``x`` into ``out`` over its
    constant axes (input 1; :func:`split_dims`' runs and the reduced element count)."""
    axes_v = ctx.const(1)
    if axes_v is None:
        raise ctx.unsupported("axes computed at run time")
    rank = len(x.shape)
    axes = {int(a) + rank if a < 0 else int(a) for a in np.asarray(axes_v).reshape(-1)}
    kept, red = split_dims(x.shape, axes)
    count = int(np.prod([n for n, _ in red], dtype=np.int64))
    if len(kept) > 4 or len(red) > 4:
        raise ctx.unsupported(f"axes {sorted(axes)} of {x.shape} alternate too often (4 runs of each kind)")
    if int(np.prod([n for n, _ in kept], dtype=np.int64)) != out.size or count == 0:
        raise ctx.unsupported(f"reduction of {x.shape} over {sorted(axes)} does not give {out.shape}")
    return axes, kept, red, count


def _reduce(op: str):
    def factory(node: Node, ctx: GpuContext) -> Program | list[Program]:
        x, out = ctx.input(0), ctx.output(0)
        ctx.require_quant_free(0)
        word = "bool" if op in _BOOL else _WORDS.get(x.dtype)
        if word is None or out.dtype != x.dtype or (word == "bool") != (x.dtype == np.bool_):
            raise ctx.unsupported(f"dtype {x.dtype} -> {out.dtype} (float32 and int32; bool for ANY/ALL)")
        axes, kept, red, count = reduction(ctx, x, out)
        name = f"{node.op.lower()} {x.shape} axes {sorted(axes)}"
        if word == "bool":
            (ks, kt), (rs, rt) = _vec4(kept), _vec4(red)
            params = [("kshape", "vec4u", ks), ("kstride", "vec4u", kt), ("rshape", "vec4u", rs),
                      ("rstride", "vec4u", rt), ("count", "u32", count), ("x_off", "u32", x.offset),
                      ("outs", "u32", out.size), ("out_off", "u32", out.offset)]
            return make_program(name, "reduce_bool", params, words(out), word="u32", INIT=_BOOL[op][0],
                                OPR=_BOOL[op][1], reduction_per_thread=count)
        init, update, finish = _KINDS[op][word]
        return row_programs(ctx, name, x.offset, out.offset, kept, red, word=word, init=init, update=update,
                            finish=finish)
    return factory


# REDUCE_ANY / REDUCE_ALL: (initial value, operator) over bools.
_BOOL = {Op.REDUCE_ANY: ("false", "||"), Op.REDUCE_ALL: ("true", "&&")}

for _op in (*_KINDS, *_BOOL):
    register_kernel(_op, "webgpu", _reduce(_op))


@register_kernel(Op.CUMSUM, "webgpu")
def cumsum(node: Node, ctx: GpuContext) -> Program:
    """One line along the axis per thread, summed in order (reversed for ``reverse``)."""
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_quant_free(0)
    word = _WORDS.get(x.dtype)
    axis_v = ctx.const(1)
    if word is None or out.dtype != x.dtype or out.shape != x.shape or axis_v is None or not x.shape:
        raise ctx.unsupported(f"{x.dtype} {x.shape} -> {out.dtype} {out.shape} (float32/int32, constant axis)")
    rank = len(x.shape)
    axis = int(np.asarray(axis_v).reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.unsupported(f"axis {axis} for rank {rank}")
    n, inner = x.shape[axis], int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    opts = node.options
    params = [("len", "u32", n), ("inner", "u32", inner), ("exclusive", "u32", int(getattr(opts, "exclusive", False))),
              ("reverse", "u32", int(getattr(opts, "reverse", False))), ("x_off", "u32", x.offset),
              ("out_off", "u32", out.offset)]
    return make_program(f"cumsum {x.shape} axis {axis}", "cumsum", params, x.size // max(n, 1), word=word,
                        ZERO="0.0" if word == "f32" else "0")
