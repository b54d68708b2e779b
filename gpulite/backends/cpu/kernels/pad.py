"""PAD and PADV2 (constant padding).

The factory splits the output into the interior (a view the input is copied into) and a
set of border slabs that tile the rest exactly once. The border is rewritten on every run
because arena memory is shared: another tensor may have used those bytes since the last
invoke. Quantized PAD pads with the output zero point (TFLite's rule); PADV2 pads with
its constant value input, which for quantized tensors is already a code.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def border_slabs(shape: tuple[int, ...], pads: list[tuple[int, int]]) -> list[tuple[slice, ...]]:
    """Slices covering ``shape`` minus the padded interior, each element exactly once.

    Slab ``d`` spans the interior along dims before ``d``, one pad along ``d``, and the full
    extent along dims after ``d``.
    """
    inner = [slice(a, n - b) for n, (a, b) in zip(shape, pads, strict=True)]
    slabs = []
    for d, (n, (a, b)) in enumerate(zip(shape, pads, strict=True)):
        lead, tail = inner[:d], [slice(None)] * (len(shape) - d - 1)
        if a:
            slabs.append((*lead, slice(0, a), *tail))
        if b:
            slabs.append((*lead, slice(n - b, n), *tail))
    return slabs


def _pad(node: Node, ctx: CpuContext) -> Callable[[], None]:
    src, out = ctx.input(0), ctx.output(0)
    pads = layout.pad_amounts(node, ctx.in_info(0).shape, ctx.const(1))
    expected = tuple(d + a + b for d, (a, b) in zip(src.shape, pads, strict=True))
    if out.shape != expected or out.dtype != src.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; padding {list(src.shape)} "
                         f"{src.dtype} by {pads} gives {list(expected)} {src.dtype}")
    interior = out[tuple(slice(a, n - b) for n, (a, b) in zip(out.shape, pads, strict=True))]
    slabs = [out[s] for s in border_slabs(out.shape, pads)]
    if ctx.has_input(2):  # a PAD with a third input pads with it, as PADV2 (LiteRT: one Prepare for both)
        cv = ctx.input(2)
        if cv.size != 1 or cv.dtype != src.dtype:
            raise ShapeError(f"{layout.where(node)}constant value must be one {src.dtype}; got {cv.size} x {cv.dtype}")
        value = cv.reshape(())  # read at run time: the value may be computed by another node
    else:
        q = ctx.out_info(0).quant
        zp = int(q.zero_point[0]) if q is not None and q.zero_point.size else 0
        if src.dtype.kind == "f" and zp:
            raise UnsupportedOpError(node.op, node.index, "cpu", "float tensor with a zero point")
        value = np.array(zp, dtype=src.dtype)

    def run() -> None:
        for s in slabs:
            s.fill(value)
        np.copyto(interior, src)
    return run


register_kernel(Op.PAD, "cpu", _pad)
register_kernel(Op.PADV2, "cpu", _pad)
