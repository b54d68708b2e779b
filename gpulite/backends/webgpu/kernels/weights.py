"""Allocate-time weight re-layouts shared by the convolution kernels (conv.py, transpose_conv.py)."""

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


def packed_weights_c4(w: np.ndarray) -> np.ndarray:
    """OHWI weights as [G, KH, KW, Cin/4, 4 (input), 4 (output)], output channels zero-padded.

    For Cin a multiple of 4. Each thread (one group of 4 output channels) then reads its
    weights front to back, one 4x4 block per 4 input channels.
    """
    cout, kh, kw, cin = w.shape
    groups = -(-cout // 4)
    wp = np.zeros((groups * 4, kh, kw, cin), np.float32)
    wp[:cout] = w
    # [G, 4o, KH, KW, Cin4, 4i] -> [G, KH, KW, Cin4, 4i, 4o]
    return np.ascontiguousarray(wp.reshape(groups, 4, kh, kw, cin // 4, 4).transpose(0, 2, 3, 4, 5, 1))
