"""MEAN, SUM, REDUCE_MAX, REDUCE_MIN and REDUCE_PROD over any axes (float32 and int32),
REDUCE_ANY / REDUCE_ALL (bool); CUMSUM."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.movement import words
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_F_NEG_INF, _F_POS_INF = "bitcast<f32>(0xff800000u)", "bitcast<f32>(0x7f800000u)"
_I_MIN, _I_MAX = "i32(-2147483647 - 1)", "2147483647"
# op -> word -> (initial value, update of acc with v, result from acc and P.count).
# Integer MEAN truncates toward zero (WGSL's i32 division), as TFLite.
_KINDS = {
    Op.MEAN: {"f32": ("0.0", "acc + v", "acc / f32(P.count)"), "i32": ("0", "acc + v", "acc / i32(P.count)")},
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


def _reduce(op: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        x, out = ctx.input(0), ctx.output(0)
        ctx.require_quant_free(0)
        word = "bool" if op in _BOOL else _WORDS.get(x.dtype)
        if word is None or out.dtype != x.dtype or (word == "bool") != (x.dtype == np.bool_):
            raise ctx.unsupported(f"dtype {x.dtype} -> {out.dtype} (float32 and int32; bool for ANY/ALL)")
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
        (ks, kt), (rs, rt) = _vec4(kept), _vec4(red)
        params = [("kshape", "vec4u", ks), ("kstride", "vec4u", kt), ("rshape", "vec4u", rs), ("rstride", "vec4u", rt),
                  ("count", "u32", count), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        if word == "bool":
            params[-1:-1] = [("outs", "u32", out.size)]
            return make_program(f"{node.op.lower()} {x.shape} axes {sorted(axes)}", "reduce_bool", params,
                                words(out), word="u32", INIT=_BOOL[op][0], OPR=_BOOL[op][1],
                                reduction_per_thread=count)
        init, update, finish = _KINDS[op][word]
        return make_program(f"{node.op.lower()} {x.shape} axes {sorted(axes)}", "reduce", params, out.size,
                            word=word, INIT=init, REDUCE=update, FINISH=finish, reduction_per_thread=count)
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
