"""Eager ops: the backends' kernels one at a time, on :class:`~gpulite.tensor.Tensor` s (TF.js ``tf.*`` ops).

Each call builds a one-node graph, compiles it once per (op, shapes, dtypes, options) on the
active backend (cached), and runs it; on a GPU backend the result stays on the GPU until
read. So pre- and post-processing can run on the GPU without a model::

    import gpulite
    from gpulite import ops
    gpulite.set_backend("webgpu")
    with gpulite.tidy():
        x = gpulite.tensor(frame)                      # uploaded on first GPU use
        y = ops.resize_bilinear(x, (128, 128))
        y = ops.div(ops.sub(y, 127.5), 127.5)
        out = gpulite.keep(y)
    pixels = out.data_sync()                           # the only readback

Layouts are TFLite's: NHWC activations, OHWI conv filters (see :mod:`gpulite.ops.nn`).
"""

import sys

from gpulite import tensor as _tensor
from gpulite.ops.layout import concat, pad, reshape, slice, transpose
from gpulite.ops.math import (
    add,
    argmax,
    div,
    exp,
    hard_swish,
    matmul,
    max,
    maximum,
    mean,
    minimum,
    mul,
    relu,
    relu6,
    rsqrt,
    sigmoid,
    softmax,
    sqrt,
    sub,
    sum,
    tanh,
)
from gpulite.ops.nn import avg_pool2d, conv2d, depthwise_conv2d, max_pool2d, resize_bilinear

__all__ = [
    "add", "argmax", "avg_pool2d", "concat", "conv2d", "depthwise_conv2d", "div", "exp", "hard_swish", "matmul",
    "max", "max_pool2d", "maximum", "mean", "minimum", "mul", "pad", "relu", "relu6", "reshape", "resize_bilinear",
    "rsqrt", "sigmoid", "slice", "softmax", "sqrt", "sub", "sum", "tanh", "transpose",
]

_tensor.set_op_handler(sys.modules[__name__])  # the ops behind Tensor's operators (TF.js setOpHandler)
