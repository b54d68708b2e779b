"""SLICE and STRIDED_SLICE: precomputed input views, one copy per run.

Both resolve their constant begin/end/size/strides once (TFLite's mask and clamping rules
are in :mod:`gpulite.graph.layout` and :mod:`gpulite.graph.strided_slice`) into a strided
numpy view of the input; ``run`` copies that view into the output, reshaped once so shrunk
and new axes line up.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.graph.strided_slice import resolve_strided_slice
from gpulite.model.opdefs import Op


def _copy_view(node: Node, view: np.ndarray, out: np.ndarray, expected: tuple[int, ...]) -> Callable[[], None]:
    if out.shape != expected or out.dtype != view.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; the slice gives "
                         f"{list(expected)} {view.dtype}")
    dst = out.reshape(view.shape)

    def run() -> None:
        np.copyto(dst, view)
    return run


def _need_consts(node: Node, ctx: CpuContext, inputs: range) -> None:
    missing = [i for i in inputs if ctx.const(i) is None]
    if missing:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"inputs {missing} are computed at run time; "
                                 "the CPU kernel needs constant slice parameters")


@register_kernel(Op.SLICE, "cpu")
def slice_(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy ``input[begin : begin + size]`` (``size`` -1 runs to the end of the dim)."""
    _need_consts(node, ctx, range(1, 3))
    win = layout.slice_window(node, ctx.in_info(0).shape, ctx.const(1), ctx.const(2))
    view = ctx.input(0)[win]
    return _copy_view(node, view, ctx.output(0), view.shape)


@register_kernel(Op.STRIDED_SLICE, "cpu")
def strided_slice(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Copy a strided window of the input, with every mask of TFLite's STRIDED_SLICE."""
    _need_consts(node, ctx, range(1, 4))
    spec = resolve_strided_slice(node, ctx.in_info(0).shape, ctx.const(1), ctx.const(2), ctx.const(3))
    view = ctx.input(0).reshape(spec.effective_shape)[spec.slices]
    return _copy_view(node, view, ctx.output(0), spec.out_shape)
