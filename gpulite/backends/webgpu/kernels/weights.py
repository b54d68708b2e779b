"""Allocate-time weight re-layouts: biases (conv.py, transpose_conv.py) and TRANSPOSE_CONV's weights."""

from __future__ import annotations

import numpy as np

from gpulite.backends.webgpu.context import GpuContext, TensorRef


def bias_ref(ctx: GpuContext, n: int, padded: int, index: int = 2) -> TensorRef:
    """Input ``index`` (the bias) as a weight constant of ``padded`` floats (zeros when absent or
    beyond ``n``), read with ``wt``/``wt4`` (float16 in fp16 plans: ``ctx.weight``)."""
    b = np.zeros(padded, np.float32)
    if ctx.has_input(index):
        val = ctx.const(index)
        if val is None:
            raise ctx.unsupported("bias computed at run time")
        b[:n] = val.astype(np.float32).reshape(-1)
    return ctx.weight(b)


def packed_weights(w: np.ndarray) -> tuple[np.ndarray, int]:
    """OHWI weights as [KH, KW, Cin, Cout4] (zero-padded) and the number of 4-channel groups.

    The kernels compute four output channels per thread, so one input value meets four
    consecutive weights.
    """
    cout, kh, kw, cin = w.shape
    groups = -(-cout // 4)
    wt = np.zeros((kh, kw, cin, groups * 4), np.float32)
    wt[..., :cout] = w.transpose(1, 2, 3, 0)
    return wt, groups
