"""DEPTH_TO_SPACE and SPACE_TO_DEPTH (NHWC, TFLite's DCR channel order).

Both are a fixed permutation of a 6-D view, built once; ``run`` is one copy. Codes of
quantized tensors move unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def _check(node: Node, src: np.ndarray, out: np.ndarray, expected: tuple[int, ...]) -> None:
    if out.shape != expected or out.dtype != src.dtype:
        raise ShapeError(f"{layout.where(node)}output is {list(out.shape)} {out.dtype}; expected {list(expected)} "
                         f"{src.dtype} for input {list(src.shape)}")


def _block(node: Node, src: np.ndarray) -> int:
    bs = int(getattr(node.options, "block_size", 0))
    if src.ndim != 4 or bs < 1:
        raise ShapeError(f"{layout.where(node)}expected a 4-D input and block_size >= 1; got {list(src.shape)}, {bs}")
    return bs


def _copy(dst: np.ndarray, view: np.ndarray) -> Callable[[], None]:
    """The kernel: one copy of the permuted input view into the output view."""
    def run() -> None:
        np.copyto(dst, view)
    return run


@register_kernel(Op.DEPTH_TO_SPACE, "cpu")
def depth_to_space(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C' + c]``."""
    src, out = ctx.input(0), ctx.output(0)
    bs = _block(node, src)
    n, h, w, c = src.shape
    if c % (bs * bs):
        raise ShapeError(f"{layout.where(node)}depth {c} is not divisible by block_size² = {bs * bs}")
    cp = c // (bs * bs)
    _check(node, src, out, (n, h * bs, w * bs, cp))
    return _copy(out.reshape(n, h, bs, w, bs, cp), src.reshape(n, h, w, bs, bs, cp).transpose(0, 1, 3, 2, 4, 5))


@register_kernel(Op.SPACE_TO_DEPTH, "cpu")
def space_to_depth(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``out[n, h, w, (i*b + j)*C + c] = in[n, h*b + i, w*b + j, c]``."""
    src, out = ctx.input(0), ctx.output(0)
    bs = _block(node, src)
    n, h, w, c = src.shape
    if h % bs or w % bs:
        raise ShapeError(f"{layout.where(node)}height {h} and width {w} must be multiples of block_size {bs}")
    _check(node, src, out, (n, h // bs, w // bs, c * bs * bs))
    view = src.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return _copy(out.reshape(n, h // bs, w // bs, bs, bs, c), view)
