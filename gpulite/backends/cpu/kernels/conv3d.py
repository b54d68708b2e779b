"""CONV_3D and CONV_3D_TRANSPOSE (float32), as LiteRT's conv3d.cc and conv3d_transpose.cc.

CONV_3D: im2col over the (depth, height, width) taps, one GEMM.

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
from gpulite.graph.shape_rules.conv3d import conv3d_geometry, conv3d_transpose_shape
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


@register_kernel(Op.CONV_3D_TRANSPOSE, "cpu")
def conv3d_transpose(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Transposed 3-D convolution: each input voxel's ``x @ filter[tap]`` added at its strided,
    dilated output position (conv3d_transpose.cc's reference order of taps), then the crop by
    the SAME padding, the bias and the fused activation. ``output_shape`` must be constant."""
    if len(node.inputs) not in (3, 4) or len(node.outputs) != 1:
        raise ShapeError(f"{where(node)}expected 3 or 4 inputs and 1 output, got {list(node.inputs)} and "
                         f"{list(node.outputs)}")
    f, x, out = ctx.input(1), ctx.input(2), ctx.output(0)
    has_bias = len(node.inputs) == 4 and ctx.has_input(3)
    if x.dtype != _F32 or f.dtype != _F32 or out.dtype != _F32 or (has_bias and ctx.in_info(3).dtype != _F32):
        raise unsupported(node, f"float32 only (LiteRT's conv3d_transpose.cc), got {x.dtype} input, {f.dtype} filter "
                          f"-> {out.dtype}")
    if ctx.const(0) is None:
        raise unsupported(node, "output_shape is computed at run time; gpulite needs it constant")
    shape = conv3d_transpose_shape(node, ctx.const(0), x.shape, f.shape)
    check_out(node, out, shape)
    strides, dilations, _ = conv3d_geometry(node, shape, f.shape)
    pads = [pad_before_after(shape[1 + i], f.shape[i], strides[i], dilations[i], x.shape[1 + i])[0] for i in range(3)]
    full = [max((x.shape[1 + i] - 1) * strides[i] + (f.shape[i] - 1) * dilations[i] + 1, pads[i] + shape[1 + i])
            for i in range(3)]
    acc = np.zeros((x.shape[0], *full, shape[4]), _F32)
    crop = acc[:, pads[0]:pads[0] + shape[1], pads[1]:pads[1] + shape[2], pads[2]:pads[2] + shape[3]]
    taps = []
    for tap in np.ndindex(*f.shape[:3]):
        window = tuple(slice(t * d, t * d + (n - 1) * s + 1, s)
                       for t, d, s, n in zip(tap, dilations, strides, x.shape[1:4], strict=True))
        taps.append((acc[(slice(None), *window)], np.ascontiguousarray(f[tap].T)))  # [in, out]
    bias = ctx.input(3) if has_bias else None
    act = clamp_fn(node.activation)
    prod = np.empty((*x.shape[:4], shape[4]), _F32)

    def run() -> None:
        acc.fill(0)
        for dst, w in taps:
            np.matmul(x, w, out=prod)
            np.add(dst, prod, out=dst)
        np.copyto(out, crop)
        if bias is not None:
            np.add(out, bias, out=out)
        if act:
            act(out)
    return run
