"""SHAPE, RANK, FILL, RANGE, BROADCAST_TO and BROADCAST_ARGS.

Outputs whose shape comes from an input (FILL's dims, RANGE's bounds, BROADCAST_TO's shape)
are sized at allocate: from the constant when the input is one (a shape computation folded
by :mod:`gpulite.graph.resolve` included), otherwise from the model's stored output shape,
which each invoke then checks against the run-time values (a mismatch is a
:class:`ShapeError` naming the node).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.lookup import qparams
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import data_layout as dl
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.model.opdefs import Op

_INDEX = (np.dtype(np.int32), np.dtype(np.int64))


def arity(node: Node, n_in: int | tuple[int, ...], n_out: int = 1) -> None:
    """ShapeError unless the node has ``n_in`` (all present) inputs and ``n_out`` outputs."""
    allowed = (n_in,) if isinstance(n_in, int) else n_in
    if len(node.inputs) not in allowed or any(i < 0 for i in node.inputs) or len(node.outputs) != n_out:
        raise ShapeError(f"{where(node)}expected {' or '.join(map(str, allowed))} inputs and {n_out} output(s), got "
                         f"inputs {list(node.inputs)} and outputs {list(node.outputs)}")


def unsupported(node: Node, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(node.op, node.index, "cpu", why)


def check_out(node: Node, out: np.ndarray, shape, dtype=None) -> None:
    """ShapeError unless ``out`` has ``shape`` (and ``dtype``, when given)."""
    if tuple(out.shape) != tuple(shape) or (dtype is not None and out.dtype != dtype):
        want = f"{list(shape)}" + (f" {np.dtype(dtype)}" if dtype is not None else "")
        raise ShapeError(f"{where(node)}output is {list(out.shape)} {out.dtype}; the op gives {want}")


def _constant_output(node: Node, ctx: CpuContext, value: np.ndarray) -> Callable[[], None]:
    out = ctx.output(0)
    if out.dtype not in _INDEX:
        raise unsupported(node, f"output dtype {out.dtype}; expected int32 or int64")
    check_out(node, out, value.shape)
    fixed = value.astype(out.dtype)

    def run() -> None:
        np.copyto(out, fixed)  # every invoke: the arena slot is shared
    return run


@register_kernel(Op.SHAPE, "cpu")
def shape(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The input's shape as a 1-D int32/int64 tensor (known at allocate)."""
    arity(node, 1)
    return _constant_output(node, ctx, np.array(ctx.in_info(0).shape, np.int64))


@register_kernel(Op.RANK, "cpu")
def rank(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The input's rank as an int32 scalar."""
    arity(node, 1)
    return _constant_output(node, ctx, np.array(len(ctx.in_info(0).shape), np.int64))


_FILL_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16,
                                            np.int32, np.uint32, np.int64, np.bool_))


def _check_dims(node: Node, dims: np.ndarray, out: np.ndarray, what: str) -> None:
    if dims.shape != (out.ndim,) or tuple(int(d) for d in dims) != out.shape:
        raise ShapeError(f"{where(node)}{what} {dims.tolist()} at run time, but the output was sized "
                         f"{list(out.shape)} at allocate (gpulite sizes outputs at allocate, from shapes, not from "
                         "input data)")


@register_kernel(Op.FILL, "cpu")
def fill(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The output filled with the scalar ``value`` (dtypes of LiteRT's fill.cc, strings aside)."""
    arity(node, 2)
    di, vi, out = ctx.in_info(0), ctx.in_info(1), ctx.output(0)
    if di.dtype not in _INDEX or vi.dtype != out.dtype or out.dtype not in _FILL_DTYPES:
        raise unsupported(node, f"expected int32/int64 dims and a value of the output's dtype among "
                          f"{', '.join(map(str, _FILL_DTYPES))}; got {di.dtype} dims, {vi.dtype} -> {out.dtype}")
    if len(vi.shape) != 0:
        raise ShapeError(f"{where(node)}value must be a scalar, got shape {list(vi.shape)}")
    # as LiteRT's params hold them: 0 and 0 unquantized
    (vs, vz), (os_, oz) = qparams(vi) or (0.0, 0), qparams(ctx.out_info(0)) or (0.0, 0)
    if (vs, vz) != (os_, oz) or (out.dtype == np.int16 and vz != 0):  # fill.cc's Prepare
        raise unsupported(node, f"the value and the output must share scale and zero point (the codes are copied; "
                          f"int16 zero point 0), got scale {vs:g}, zero point {vz} -> scale {os_:g}, zero point {oz}")
    dims, value = ctx.input(0), ctx.input(1)
    if ctx.const(0) is not None:
        check_out(node, out, dl.dims_shape(node, ctx.const(0), "dims"))

    def run() -> None:
        if ctx.const(0) is None:
            _check_dims(node, dims, out, "dims")
        out.fill(value)
    return run


@register_kernel(Op.RANGE, "cpu")
def range_(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``start, start + delta, ...`` below ``limit``, accumulated one step at a time as range.cc does."""
    arity(node, 3)
    infos = [ctx.in_info(i) for i in range(3)]
    out = ctx.output(0)
    if any(t.dtype != out.dtype for t in infos) or out.dtype not in (np.float32, *_INDEX):
        raise unsupported(node, f"start, limit, delta and output must share a dtype among float32, int32, int64; "
                          f"got {', '.join(str(t.dtype) for t in infos)} -> {out.dtype}")
    if any(len(t.shape) != 0 for t in infos) or out.ndim != 1:
        raise ShapeError(f"{where(node)}expected scalar start, limit, delta and a 1-D output")
    consts = [ctx.const(i) for i in range(3)]
    if all(c is not None for c in consts):
        check_out(node, out, dl.range_shape(node, consts))
    steps = np.empty(out.shape, out.dtype)
    start, limit, delta = (ctx.input(i) for i in range(3))

    def run() -> None:
        n = dl.range_count(node, start[()], limit[()], delta[()])
        if n != out.shape[0]:
            raise ShapeError(f"{where(node)}the range has {n} elements at run time, but the output was sized "
                             f"{out.shape[0]} at allocate (gpulite sizes outputs at allocate, from shapes, not "
                             "from input data)")
        if n:
            steps.fill(delta[()])
            steps[0] = start[()]
            np.add.accumulate(steps, out=out)  # sequential, as the kernel's `value += delta`
    return run


@register_kernel(Op.BROADCAST_TO, "cpu")
def broadcast_to(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy the input broadcast to the shape input's dims."""
    arity(node, 2)
    x, out = ctx.input(0), ctx.output(0)
    if ctx.in_info(1).dtype not in _INDEX or out.dtype != x.dtype:
        raise unsupported(node, f"expected int32/int64 shape and matching input and output dtypes, got "
                          f"{ctx.in_info(1).dtype} shape, {x.dtype} -> {out.dtype}")
    if ctx.const(1) is not None:
        check_out(node, out, dl.broadcast_to_shape(node, x.shape, ctx.const(1)))
    else:
        dl.broadcast_to_shape(node, x.shape, np.array(out.shape, np.int64))
    target = ctx.input(1)

    def run() -> None:
        if ctx.const(1) is None:
            _check_dims(node, target, out, "the shape")
        np.copyto(out, x)
    return run


@register_kernel(Op.BROADCAST_ARGS, "cpu")
def broadcast_args(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """The broadcast of two shape vectors (int32 or int64)."""
    arity(node, 2)
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if not (a.dtype == b.dtype == out.dtype) or a.dtype not in _INDEX or a.ndim != 1 or b.ndim != 1:
        raise unsupported(node, f"expected two 1-D shape tensors and an output of one dtype (int32 or int64), got "
                          f"{a.dtype} {list(a.shape)}, {b.dtype} {list(b.shape)} -> {out.dtype}")
    check_out(node, out, (max(a.shape[0], b.shape[0]),))

    def run() -> None:
        try:
            out[...] = np.broadcast_shapes(tuple(int(d) for d in a), tuple(int(d) for d in b))
        except ValueError:
            raise ShapeError(f"{where(node)}shapes {a.tolist()} and {b.tolist()} do not broadcast") from None
    return run
