"""Comparisons, logical ops and SELECT / SELECT_V2, with LiteRT's dtypes and broadcasting.

EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL give bool tensors. Each takes the
dtypes of LiteRT's ``comparisons.cc``; int8/uint8 operands are compared after LiteRT's
rescale (``ComparisonWithScaling``): ``(q - zero_point) << 8`` multiplied by each input's
scale as a Q31 multiplier, so two tensors with different quantization compare as reals,
with LiteRT's rounding. LOGICAL_AND / OR / NOT take bool. SELECT picks from ``x`` where the
bool condition holds and from ``y`` elsewhere: the condition has ``x``'s shape, is a scalar,
or (version 1's row form) a vector over ``x``'s first dim; SELECT_V2 broadcasts all three.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.elementwise import check_broadcast
from gpulite.backends.cpu.quant import multiply_by_quantized_multiplier, quantize_multiplier
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.graph.shape_rules.logic import select_shape
from gpulite.model.opdefs import Op

BOOL = np.dtype(np.bool_)
_F32, _I16, _I32, _I64 = (np.dtype(t) for t in (np.float32, np.int16, np.int32, np.int64))
_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))
_ORDERED = (_F32, _I32, _I64, *_EIGHT_BIT)

# op -> (numpy comparison, dtypes LiteRT's kernel takes). As LiteRT 2.3: 8-bit inputs are rescaled
# first; int16 ones too for (NOT_)EQUAL when quantized, and compared as codes otherwise (the
# ordering comparisons ignore int16 scales; unquantized int16 NOT_EQUAL leaves the output unwritten)
COMPARISONS: dict[str, tuple[np.ufunc, tuple[np.dtype, ...]]] = {
    Op.EQUAL: (np.equal, (*_ORDERED, _I16, BOOL)),
    Op.NOT_EQUAL: (np.not_equal, (*_ORDERED, _I16, BOOL)),
    Op.LESS: (np.less, (*_ORDERED, _I16)),
    Op.LESS_EQUAL: (np.less_equal, (*_ORDERED, _I16)),
    Op.GREATER: (np.greater, (*_ORDERED, _I16)),
    Op.GREATER_EQUAL: (np.greater_equal, (*_ORDERED, _I16)),
}
LOGICAL: dict[str, np.ufunc] = {Op.LOGICAL_AND: np.logical_and, Op.LOGICAL_OR: np.logical_or}
# SELECT copies elements whatever they hold; these are the types LiteRT's select.cc lists.
SELECT_DTYPES = (BOOL, _F32, *_EIGHT_BIT, _I16, _I32, _I64, np.dtype(np.uint32))


def _arity(node: Node, n_in: int) -> None:
    if len(node.inputs) != n_in or any(i < 0 for i in node.inputs) or len(node.outputs) != 1:
        raise ShapeError(f"{layout.where(node)}expected {n_in} inputs and 1 output, got inputs {list(node.inputs)} "
                         f"and outputs {list(node.outputs)}")


def _unsupported(node: Node, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(node.op, node.index, "cpu", why)


def _rescaler(node: Node, info) -> Callable[[np.ndarray], np.ndarray]:
    """LiteRT's rescaled comparison input (8-bit; int16 (NOT_)EQUAL):
    ``MultiplyByQuantizedMultiplierSmallerThanOneExp((q - zp) << 8)``."""
    q = info.quant
    if q is None or q.scale.size != 1:
        raise _unsupported(node, f"{info.dtype} inputs must be quantized per tensor (LiteRT compares them "
                           f"after rescaling), got {'no quantization' if q is None else f'{q.scale.size} scales'}")
    scale, zp = float(q.scale[0]), int(q.zero_point[0])
    if not 0.0 < scale < 1.0:
        raise _unsupported(node, f"input scale {scale}: LiteRT's rescaled comparison needs 0 < scale < 1")
    m, shift = quantize_multiplier(scale)
    return lambda x: multiply_by_quantized_multiplier((x.astype(np.int64) - zp) << 8, m, shift)


def rescaled(op: str, info) -> bool:
    """Whether LiteRT compares inputs like ``info`` after the rescale of :func:`_rescaler` (else as
    they are): 8-bit ones, and quantized int16 ones for (NOT_)EQUAL (LiteRT 2.3's ordering
    comparisons take int16 codes as they are, scales aside)."""
    quantized16 = info.dtype == _I16 and info.quant is not None and info.quant.scale.size > 0
    return info.dtype in _EIGHT_BIT or (quantized16 and op in (Op.EQUAL, Op.NOT_EQUAL))


def comparison(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Factory for :data:`COMPARISONS`: a bool output, the inputs broadcast numpy-style."""
    _arity(node, 2)
    fn, dtypes = COMPARISONS[node.op]
    ai, bi, oi = ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)
    if ai.dtype != bi.dtype or ai.dtype not in dtypes or oi.dtype != BOOL:
        raise _unsupported(node, f"expected two inputs of one dtype among {', '.join(map(str, dtypes))} and a bool "
                           f"output (LiteRT's kernel), got {ai.dtype}, {bi.dtype} -> {oi.dtype}")
    if node.op == Op.NOT_EQUAL and ai.dtype == _I16 and (ai.quant is None or ai.quant.scale.size == 0):
        raise _unsupported(node, "unquantized int16 NOT_EQUAL: LiteRT 2.3's kernel leaves the output unwritten "
                           "(it runs only quantized int16)")
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    check_broadcast(node, a.shape, b.shape, out.shape)
    if rescaled(node.op, ai):
        ra, rb = _rescaler(node, ai), _rescaler(node, bi)

        def run_quantized() -> None:
            fn(ra(a), rb(b), out=out)
        return run_quantized

    def run() -> None:
        fn(a, b, out=out)
    return run


for _op in COMPARISONS:
    register_kernel(_op, "cpu", comparison)


def _bools(node: Node, infos) -> None:
    if any(t.dtype != BOOL for t in infos):
        raise _unsupported(node, f"bool tensors only (LiteRT's kernel), got {' -> '.join(str(t.dtype) for t in infos)}")


def logical(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """LOGICAL_AND / LOGICAL_OR of two bool tensors, broadcast."""
    _arity(node, 2)
    _bools(node, (ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)))
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    check_broadcast(node, a.shape, b.shape, out.shape)
    fn = LOGICAL[node.op]

    def run() -> None:
        fn(a, b, out=out)
    return run


for _op in LOGICAL:
    register_kernel(_op, "cpu", logical)


@register_kernel(Op.LOGICAL_NOT, "cpu")
def logical_not(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Negate a bool tensor."""
    _arity(node, 1)
    _bools(node, (ctx.in_info(0), ctx.out_info(0)))
    x, out = ctx.input(0), ctx.output(0)
    if x.shape != out.shape:
        raise ShapeError(f"{layout.where(node)}input {list(x.shape)} but output {list(out.shape)}")

    def run() -> None:
        np.logical_not(x, out=out)
    return run


def _select(node: Node, ctx: CpuContext) -> Callable[[], None]:
    _arity(node, 3)
    ci, xi, yi, oi = ctx.in_info(0), ctx.in_info(1), ctx.in_info(2), ctx.out_info(0)
    if ci.dtype != BOOL or not (xi.dtype == yi.dtype == oi.dtype) or xi.dtype not in SELECT_DTYPES:
        raise _unsupported(node, "expected a bool condition and x, y, output of one dtype among "
                           f"{', '.join(map(str, SELECT_DTYPES))}; "
                           f"got {ci.dtype}, {xi.dtype}, {yi.dtype} -> {oi.dtype}")
    c, x, y, out = ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)
    shape = select_shape(node, c.shape, x.shape, y.shape)
    if shape != out.shape:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)}; the inputs give {list(shape)}")
    if node.op == Op.SELECT and c.ndim == 1 and x.ndim > 1:
        c = c.reshape(c.shape + (1,) * (x.ndim - 1))  # the row form: one flag per first-dim slice

    def run() -> None:
        np.copyto(out, y)
        np.copyto(out, x, where=c)
    return run


register_kernel(Op.SELECT, "cpu", _select)
register_kernel(Op.SELECT_V2, "cpu", _select)
