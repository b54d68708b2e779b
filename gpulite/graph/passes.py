"""Load-time pass: constant folding.

Folding evaluates DEQUANTIZE (fp16/int8 weights to fp32) and DENSIFY (sparse weights to
dense) when their inputs are constants, so backends only ever see dense fp32 weights and
the folded nodes disappear from the plan. Fusion is :mod:`gpulite.graph.fusion`.
"""

from __future__ import annotations

import numpy as np

from gpulite.errors import ModelError
from gpulite.graph.densify import densify
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.model.opdefs import Op


def dequantize_const(t: TensorInfo) -> np.ndarray:
    x = t.const
    assert x is not None
    if x.dtype == np.float16:
        return x.astype(np.float32)
    if t.quant is None:
        return x.astype(np.float32)
    q = t.quant
    if q.per_channel:
        bshape = [1] * x.ndim
        bshape[q.axis] = -1
        scale, zp = q.scale.reshape(bshape), q.zero_point.reshape(bshape)
    else:
        scale, zp = q.scale[0], q.zero_point[0]
    return ((x.astype(np.float32) - zp.astype(np.float32)) * scale).astype(np.float32)


def fold_constants(g: Graph) -> Graph:
    """Evaluate DEQUANTIZE and DENSIFY of constants; drop those nodes."""
    keep: list[Node] = []
    for n in g.nodes:
        ins = [g.tensors[i] for i in n.inputs if i >= 0]
        if n.op in (Op.DEQUANTIZE, Op.DENSIFY) and ins and all(t.is_const for t in ins):
            if len(n.outputs) != 1:
                raise ModelError(f"node {n.index} ({n.op}) has {len(n.outputs)} outputs, expected 1")
            src, dst = ins[0], g.tensors[n.outputs[0]]
            if n.op == Op.DENSIFY and src.shape != dst.shape:
                # Checked before densifying: the dense array is allocated from src.shape,
                # which a corrupted file could make arbitrarily large.
                raise ModelError(
                    f"node {n.index} (DENSIFY): input tensor {src.index} has shape {list(src.shape)} "
                    f"but output tensor {dst.index} has shape {list(dst.shape)}; they must match"
                )
            value = dequantize_const(src) if n.op == Op.DEQUANTIZE else densify(src)
            # The output's declared shape and type come from the file too; a mismatch is a
            # corrupted model, and folding it anyway would hand kernels a mislabelled tensor.
            want_dtype = np.dtype(np.float32) if n.op == Op.DEQUANTIZE else src.dtype
            if value.size != int(np.prod(dst.shape, dtype=np.int64)) or dst.dtype != want_dtype:
                raise ModelError(
                    f"node {n.index} ({n.op}): folding constant tensor {src.index} gives {value.size} "
                    f"{value.dtype} values, but output tensor {dst.index} is declared {list(dst.shape)} {dst.dtype}"
                )
            if dst.is_variable:  # a state the converter initialises this way: its value at allocate, not a constant
                dst.initial = value.reshape(dst.shape)
                continue
            dst.const = value.reshape(dst.shape)
            if dst.index in g.outputs:  # a graph output must still be produced by a node
                keep.append(n)
            continue
        keep.append(n)
    g.nodes = keep
    return g
