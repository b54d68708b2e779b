"""Convolutions, pooling and resizing as eager ops (NHWC, TFLite weight layouts).

Weights are in TFLite's layouts, not TF.js's: ``conv2d`` filters are ``[out_channels,
kh, kw, in_channels]`` (TF.js: ``[kh, kw, in, out]``, so ``transpose(w, (3, 0, 1, 2))``) and
``depthwise_conv2d`` filters ``[1, kh, kw, in_channels * multiplier]`` (TF.js: ``[kh, kw,
in, multiplier]``, so ``reshape(w, (1, kh, kw, -1))``). Filters and biases are compiled into
the op as constants, as a model's weights are (the kernels re-lay them out once); a filter
tensor is read back once per compile if it lives on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.model import schema_gen as sg
from gpulite.ops import args, layout
from gpulite.ops.dispatch import Const, Weight, run
from gpulite.tensor import Tensor

_FLOAT = (np.float32,)


def _bias(bias: Any, channels: int) -> Const | Weight:
    if bias is None:
        return Const(np.zeros(channels, np.float32))
    if isinstance(bias, Tensor):
        b = bias
    else:
        return Const(np.ascontiguousarray(np.asarray(bias, np.float32).reshape(-1)))
    if args.validating() and (b.dtype != np.float32 or b.size != channels):
        raise ValueError(f"bias must be float32 with {channels} values, got {b.shape} {b.dtype}")
    return Weight(b)


def _weight(w: Any) -> Weight | Const:
    return Weight(w) if isinstance(w, Tensor) else Const(np.ascontiguousarray(np.asarray(w, np.float32)))


def conv2d(x: Any, filter: Any, bias: Any = None, *, strides: Any = 1, padding: str = "same",
           dilations: Any = 1, activation: str | None = None) -> Tensor:
    """2-D convolution of NHWC ``x`` (TF.js ``tf.conv2d``, TFLite CONV_2D).

    Parameters
    ----------
    x : Tensor or array-like
        ``[batch, height, width, in_channels]`` float32.
    filter : Tensor or array-like
        ``[out_channels, kh, kw, in_channels]`` (TFLite OHWI).
    bias : Tensor or array-like, optional
        ``[out_channels]``.
    strides, dilations : int or (int, int)
    padding : {"same", "valid"}
    activation : {None, "relu", "relu6", "relu_n1_to_1"}
        Fused into the kernel.
    """
    x = args.as_tensor(x)
    w = _weight(filter)
    wshape = w.tensor.shape if isinstance(w, Weight) else w.value.shape
    args.require_rank(x, (4,), "conv2d")
    args.require_dtype(x, _FLOAT, "conv2d")
    if args.validating() and (len(wshape) != 4 or wshape[3] != x.shape[3]):
        raise ValueError(f"conv2d filter must be [out_channels, kh, kw, {x.shape[3]}] (TFLite OHWI) for input "
                         f"{x.shape}, got {wshape}")
    sh, sw = args.pair(strides, "strides")
    dh, dw = args.pair(dilations, "dilations")
    opts = sg.Conv2DOptions(padding=args.padding(padding), stride_w=sw, stride_h=sh,
                            fused_activation_function=args.activation(activation),
                            dilation_w_factor=dw, dilation_h_factor=dh)
    return run("CONV_2D", [x, w, _bias(bias, wshape[0])], options=opts)


def depthwise_conv2d(x: Any, filter: Any, bias: Any = None, *, strides: Any = 1,
                     padding: str = "same", dilations: Any = 1, activation: str | None = None) -> Tensor:
    """Depthwise 2-D convolution (TF.js ``tf.depthwiseConv2d``, TFLite DEPTHWISE_CONV_2D).

    ``filter`` is ``[1, kh, kw, in_channels * multiplier]``; other parameters as :func:`conv2d`.
    """
    x = args.as_tensor(x)
    w = _weight(filter)
    wshape = w.tensor.shape if isinstance(w, Weight) else w.value.shape
    args.require_rank(x, (4,), "depthwise_conv2d")
    args.require_dtype(x, _FLOAT, "depthwise_conv2d")
    if args.validating() and (len(wshape) != 4 or wshape[0] != 1 or wshape[3] % x.shape[3]):
        raise ValueError(f"depthwise_conv2d filter must be [1, kh, kw, {x.shape[3]} * multiplier] for input "
                         f"{x.shape}, got {wshape}")
    sh, sw = args.pair(strides, "strides")
    dh, dw = args.pair(dilations, "dilations")
    opts = sg.DepthwiseConv2DOptions(padding=args.padding(padding), stride_w=sw, stride_h=sh,
                                     depth_multiplier=wshape[3] // max(x.shape[3], 1),
                                     fused_activation_function=args.activation(activation),
                                     dilation_w_factor=dw, dilation_h_factor=dh)
    return run("DEPTHWISE_CONV_2D", [x, w, _bias(bias, wshape[3])], options=opts)


def _pool(op: str, x: Any, filter_size: Any, strides: Any, padding: str) -> Tensor:
    x = args.as_tensor(x)
    args.require_rank(x, (4,), op.lower())
    args.require_dtype(x, _FLOAT, op.lower())
    fh, fw = args.pair(filter_size, "filter_size")
    sh, sw = args.pair(strides if strides is not None else (fh, fw), "strides")
    opts = sg.Pool2DOptions(padding=args.padding(padding), stride_w=sw, stride_h=sh, filter_width=fw,
                            filter_height=fh)
    return run(op, [x], options=opts)


def max_pool2d(x: Any, filter_size: Any, strides: Any = None, padding: str = "valid") -> Tensor:
    """Max pooling over NHWC ``x`` (TF.js ``tf.maxPool``); ``strides`` default to the filter size."""
    return _pool("MAX_POOL_2D", x, filter_size, strides, padding)


def avg_pool2d(x: Any, filter_size: Any, strides: Any = None, padding: str = "valid") -> Tensor:
    """Average pooling over NHWC ``x`` (TF.js ``tf.avgPool``); padded cells are not counted."""
    return _pool("AVERAGE_POOL_2D", x, filter_size, strides, padding)


def resize_bilinear(x: Any, size: Any, *, align_corners: bool = False, half_pixel_centers: bool = False) -> Tensor:
    """Bilinear resize of NHWC ``x`` to ``size = (height, width)`` (TF.js ``tf.image.resizeBilinear``).

    A rank-3 ``x`` (HWC) gives a rank-3 result.
    """
    x = args.as_tensor(x)
    args.require_rank(x, (3, 4), "resize_bilinear")
    args.require_dtype(x, _FLOAT, "resize_bilinear")
    h, w = args.pair(size, "size")
    if h < 1 or w < 1:
        raise ValueError(f"resize_bilinear size must be positive, got {size!r}")
    opts = sg.ResizeBilinearOptions(align_corners=bool(align_corners), half_pixel_centers=bool(half_pixel_centers))
    if x.ndim == 3:
        x4 = layout.reshape(x, (1, *x.shape))
        y = run("RESIZE_BILINEAR", [x4, Const(np.array([h, w], np.int32))], options=opts)
        out = layout.reshape(y, y.shape[1:])
        x4.dispose()
        y.dispose()
        return out
    return run("RESIZE_BILINEAR", [x, Const(np.array([h, w], np.int32))], options=opts)
