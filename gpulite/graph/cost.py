"""What one node costs, counted from its shapes: floating-point operations and bytes moved.

For profiles (``gpulite profile``, ``benchmarks/gpu_report.py``): achieved GFLOP/s and GB/s
are these counts over measured times. FLOPs count a multiply-add as two, as GPU peak rates
do: convolutions and matrix products ``2 * outputs * K``, pools one per window cell,
reductions one per input element, softmax-like rows a few per element, elementwise ops one
per output element (their fused epilogue steps one more each, clamps none, as fused
activations anywhere; a fused input scale one per
input element; a depthwise with a merged 1x1 both convolutions'); data movement none. Bytes are
every input read once and every output written once (constants included, omitted optional
inputs not): the least a kernel can move, so a GB/s column shows how close a memory-bound
kernel comes to the memory's rate.
"""

from __future__ import annotations

import numpy as np

from gpulite.graph.ir import Graph, Node

_MOVES = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "PAD", "PADV2", "MIRROR_PAD", "CONCATENATION", "SLICE",
          "STRIDED_SLICE", "TRANSPOSE", "GATHER", "GATHER_ND", "TILE", "BROADCAST_TO", "SPLIT", "SPLIT_V",
          "UNPACK", "PACK", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
          "CAST", "QUANTIZE", "DEQUANTIZE", "SHAPE", "FILL", "ZEROS_LIKE", "ONES_LIKE", "REVERSE_V2"}
_REDUCTIONS = {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL",
               "ARG_MAX", "ARG_MIN"}
_ROWS = {"SOFTMAX": 5, "LOG_SOFTMAX": 5, "L2_NORMALIZATION": 3, "LOCAL_RESPONSE_NORMALIZATION": 5}


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def flops(graph: Graph, node: Node) -> int:
    """Floating-point operations of ``node`` (see the module docstring); 0 for data movement."""
    t = graph.tensors
    op = str(node.op)
    ins = [t[i] for i in node.inputs if i >= 0]
    outs = [t[i] for i in node.outputs if i >= 0]
    if not outs:
        return 0
    out = _size(outs[0].shape)
    extra = out * sum(1 for s in node.epilogue if s.kind != "act")  # a clamp is free, as a fused activation
    if node.input_scale is not None:  # a fused MUL: one product per input element
        extra += _size(ins[0].shape)
    if op == "DEPTHWISE_CONV_2D" and node.pointwise is not None and len(ins[1].shape) == 4:
        _, kh, kw, c = ins[1].shape  # a merged 1x1: the depthwise on c channels, then c products per output
        pixels = out // max(outs[0].shape[-1], 1)
        return 2 * pixels * c * kh * kw + 2 * out * c + extra
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(ins) > 1 and len(ins[1].shape) == 4:
        _, kh, kw, cin = ins[1].shape
        taps = kh * kw * (cin if op == "CONV_2D" else 1)
        return 2 * out * taps + extra
    if op in ("TRANSPOSE_CONV", "Convolution2DTransposeBias"):
        x, w = (ins[2], ins[1]) if op == "TRANSPOSE_CONV" else (ins[0], ins[1])
        if len(w.shape) == 4:
            return 2 * _size(x.shape) * w.shape[0] * w.shape[1] * w.shape[2] + extra
    if op == "FULLY_CONNECTED" and len(ins) > 1 and len(ins[1].shape) == 2:
        return 2 * out * ins[1].shape[1] + extra
    if op == "BATCH_MATMUL" and len(ins) > 1 and len(ins[0].shape) >= 2:
        adj_x = bool(getattr(node.options, "adj_x", False))
        k = ins[0].shape[-2] if adj_x else ins[0].shape[-1]
        return 2 * out * k + extra
    if op in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
        o = node.options
        return out * getattr(o, "filter_height", 1) * getattr(o, "filter_width", 1) + extra
    if op in _REDUCTIONS:
        return _size(ins[0].shape) + extra
    if op in _ROWS:
        return _ROWS[op] * out + extra
    if op in _MOVES:
        return 0
    return out + extra


def bytes_moved(graph: Graph, node: Node) -> int:
    """Bytes ``node`` reads and writes at the least: each input once, each output once."""
    t = graph.tensors
    return sum(t[i].nbytes for i in (*node.inputs, *node.outputs) if i >= 0)
