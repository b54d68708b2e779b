"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION (float32), over the last axis.

L2: ``x / max(sqrt(sum(x**2)), 1e-6)`` (l2norm.cc's epsilon). LRN, as LiteRT's optimized
kernel: ``x * (bias + alpha * sum(window of x**2)) ** -beta`` with the window ``[c - radius,
c + radius]`` clipped to the channels. int8/uint8 L2 normalization: :mod:`.quantized_l2norm`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.lookup import is_quantized
from gpulite.backends.cpu.kernels.quantized_l2norm import quantized_l2_normalization
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_F32 = np.dtype(np.float32)
_L2_EPSILON = np.float32(1e-6)


def _float_io(node: Node, ctx: CpuContext) -> tuple[np.ndarray, np.ndarray]:
    arity(node, 1)
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype != _F32 or out.dtype != _F32:
        raise unsupported(node, f"expected float32 (or, for L2_NORMALIZATION, int8/uint8) input and output, got "
                          f"{x.dtype} -> {out.dtype}")
    if x.ndim < 1:
        raise unsupported(node, "expected an input of rank >= 1, got a scalar")
    check_out(node, out, x.shape)
    return x, out


@register_kernel(Op.L2_NORMALIZATION, "cpu")
def l2_normalization(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Each row of the last axis divided by its L2 norm (at least 1e-6); int8/uint8 as LiteRT's
    integer kernels (:mod:`.quantized_l2norm`)."""
    if is_quantized(ctx.in_info(0)) and ctx.in_info(0).shape:
        return quantized_l2_normalization(node, ctx)
    x, out = _float_io(node, ctx)
    if node.activation:
        raise unsupported(node, f"fused activation {node.activation} (LiteRT's l2norm.cc takes none either)")
    norm = np.empty((*x.shape[:-1], 1), np.float32)

    def run() -> None:
        np.sqrt(np.einsum("...c,...c->...", x, x)[..., None], out=norm)
        np.maximum(norm, _L2_EPSILON, out=norm)
        np.divide(x, norm, out=out)
    return run


@register_kernel(Op.LOCAL_RESPONSE_NORMALIZATION, "cpu")
def local_response_normalization(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``x * (bias + alpha * windowed sum of squares) ** -beta`` along the last axis."""
    x, out = _float_io(node, ctx)
    o = node.options
    radius, bias, alpha, beta = int(o.radius), np.float32(o.bias), np.float32(o.alpha), np.float32(o.beta)
    if radius < 0:
        raise unsupported(node, f"radius must be >= 0, got {radius}")
    depth = x.shape[-1]
    radius = min(radius, depth)  # a window past every channel adds only zeros: the same sums, bounded memory
    padded = np.zeros((*x.shape[:-1], depth + 2 * radius), np.float32)
    acc = np.empty(x.shape, np.float32)

    def run() -> None:
        np.multiply(np.square(x), alpha, out=padded[..., radius:radius + depth])
        acc.fill(bias)
        for d in range(2 * radius + 1):
            np.add(acc, padded[..., d:d + depth], out=acc)
        np.power(acc, -beta, out=acc)
        np.multiply(x, acc, out=out)
    return run
