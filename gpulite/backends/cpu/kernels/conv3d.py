"""CONV_3D (float32), as LiteRT's conv3d.cc: im2col over the (depth, height, width) taps, one GEMM.

The input is copied into a zero-bordered buffer (SAME padding puts the odd extra row after,
as TFLite's ``ComputePaddingWithOffset``), each dilated, strided tap fills its columns of the
patch matrix, and ``patches @ filter`` (filter reshaped DHWI x O) gives the output; then the
bias and the fused activation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.conv import pad_before_after
from gpulite.graph.shape_rules.conv3d import conv3d_geometry
from gpulite.model.opdefs import Op

_F32 = np.dtype(np.float32)


@register_kernel(Op.CONV_3D, "cpu")
def conv3d(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """3-D convolution of an NDHWC input with a DHWIO filter, optional bias and fused activation."""
    if len(node.inputs) not in (2, 3) or len(node.outputs) != 1:
        raise ShapeError(f"{where(node)}expected 2 or 3 inputs and 1 output, got {list(node.inputs)} and "
                         f"{list(node.outputs)}")
    x, f, out = ctx.input(0), ctx.input(1), ctx.output(0)
    has_bias = len(node.inputs) == 3 and ctx.has_input(2)
    if x.dtype != _F32 or f.dtype != _F32 or out.dtype != _F32 or (has_bias and ctx.in_info(2).dtype != _F32):
        raise unsupported(node, f"float32 only (LiteRT's conv3d.cc), got {x.dtype} input, {f.dtype} filter -> "
                          f"{out.dtype}")
    strides, dilations, outs = conv3d_geometry(node, x.shape, f.shape)
    check_out(node, out, (x.shape[0], *outs, f.shape[4]))
    pads = [pad_before_after(x.shape[1 + i], f.shape[i], strides[i], dilations[i], outs[i]) for i in range(3)]
    padded = np.zeros((x.shape[0], *(x.shape[1 + i] + sum(pads[i]) for i in range(3)), x.shape[4]), _F32)
    interior = padded[:, pads[0][0]:pads[0][0] + x.shape[1], pads[1][0]:pads[1][0] + x.shape[2],
                      pads[2][0]:pads[2][0] + x.shape[3]]
    taps = f.shape[:3]
    cols = np.empty((x.shape[0], *outs, *taps, x.shape[4]), _F32)
    fills = []
    for tap in np.ndindex(*taps):
        window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                       for t, d, s, o in zip(tap, dilations, strides, outs, strict=True))
        fills.append((cols[(slice(None), slice(None), slice(None), slice(None), *tap)],
                      padded[(slice(None), *window)]))
    k = math.prod(taps) * x.shape[4]
    weights, flat_cols, flat_out = f.reshape(k, f.shape[4]), cols.reshape(-1, k), out.reshape(-1, f.shape[4])
    bias = ctx.input(2) if has_bias else None
    act = clamp_fn(node.activation)

    def run() -> None:
        np.copyto(interior, x)
        for dst, src in fills:
            np.copyto(dst, src)
        np.matmul(flat_cols, weights, out=flat_out)
        if bias is not None:
            np.add(out, bias, out=out)
        if act:
            act(out)
    return run
