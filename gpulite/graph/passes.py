"""Load-time passes: constant folding and activation fusion.

Folding evaluates DEQUANTIZE (fp16/int8 weights to fp32) and DENSIFY (sparse weights to
dense) when their inputs are constants, so backends only ever see dense fp32 weights and
the folded nodes disappear from the plan. Fusion moves a standalone RELU/RELU6/RELU_N1_TO_1
into the producing node's fused activation when nothing else reads the intermediate.
``fuse_prelu`` (run only for a backend that asks for it, see ``Interpreter``) does the same
for PRELU after a convolution or ADD, marking ``node.attrs["fused_prelu"]``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.errors import ModelError
from gpulite.graph.densify import densify
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.model.opdefs import FusedActivation, Op

FUSABLE_PRODUCERS = {Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED, Op.ADD, Op.SUB, Op.MUL, Op.DIV,
                     Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.CONCATENATION, Op.TRANSPOSE_CONV}


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
            dst.const = value.reshape(dst.shape)
            if dst.index in g.outputs:  # a graph output must still be produced by a node
                keep.append(n)
            continue
        keep.append(n)
    g.nodes = keep
    return g


def fuse_activations(g: Graph) -> Graph:
    """Fold RELU-family nodes into their producer's fused activation."""
    consumers = g.consumers()
    producer = {o: n for n in g.nodes for o in n.outputs}
    drop = set()
    for n in g.nodes:
        act = FusedActivation.of_op(n.op)  # RELU, RELU6 and RELU_N1_TO_1 are their own clamps
        if act is None or len(n.inputs) != 1 or len(n.outputs) != 1:
            continue  # malformed arity: left for the kernel to reject at allocate_tensors
        src = n.inputs[0]
        p = producer.get(src)
        if (p is None or p.op not in FUSABLE_PRODUCERS or p.activation
                or len(consumers.get(src, [])) != 1 or src in g.outputs
                or g.tensors[src].quant is not None or g.tensors[src].dtype != np.float32):
            continue
        p.activation = act
        p.outputs = (n.outputs[0], *p.outputs[1:])
        drop.add(id(n))
    g.nodes = [n for n in g.nodes if id(n) not in drop]
    return g


PRELU_PRODUCERS = {Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.ADD}


def fuse_prelu(g: Graph, accept: Callable[[Graph, Node, Node], bool]) -> Graph:
    """Fold a PRELU into the node producing its input (a convolution or an ADD).

    The producer takes over the PRELU's output tensor and gets ``attrs["fused_prelu"]`` =
    the alpha tensor's index; the PRELU node and the intermediate disappear from the plan.
    Only when the intermediate has no other reader and is no graph output, the alpha is a
    constant, the producer has no fused activation of its own, and ``accept(g, producer,
    prelu)`` says the backend's kernel will run the fused node (a backend whose kernels do
    not know the mark must not call this pass: the PReLU would be lost).
    """
    consumers = g.consumers()
    producer = {o: n for n in g.nodes for o in n.outputs}
    drop = set()
    for n in g.nodes:
        if n.op != Op.PRELU or len(n.inputs) != 2 or len(n.outputs) != 1:
            continue
        src, alpha = n.inputs
        p = producer.get(src)
        if (p is None or p.op not in PRELU_PRODUCERS or p.activation or "fused_prelu" in p.attrs
                or len(p.outputs) != 1 or len(consumers.get(src, [])) != 1 or src in g.outputs
                or alpha < 0 or not g.tensors[alpha].is_const or not accept(g, p, n)):
            continue
        p.attrs["fused_prelu"] = alpha
        p.outputs = (n.outputs[0],)
        drop.add(id(n))
    g.nodes = [n for n in g.nodes if id(n) not in drop]
    return g
