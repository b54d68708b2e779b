"""Quantized models on the GPU the way the TFLite GPU delegate runs them: in float.

``quantized="float"`` (the default, as the delegate) rewrites the graph before fusion
(:func:`float_graph`):

- every quantized activation tensor (int8, uint8, int16 with a scale) becomes a float32
  tensor holding the real value ``scale * (q - zero_point)``;
- every quantized constant read only by ops whose meaning is the real value (weights,
  int32 biases, constant operands) is dequantized once, here, at load;
- the graph's own inputs and outputs keep their integer type and codes: a DEQUANTIZE after
  each quantized input and a QUANTIZE before each quantized output (new nodes, numbered after
  the model's operators) convert at the edges, on the GPU, so a full-int8 model with int8 I/O
  runs as one GPU partition;
- the model's own QUANTIZE and DEQUANTIZE nodes, ops that read a quantized tensor's codes
  rather than its value (:data:`RAW_OPS`, custom ops, and ops that copy codes between two
  quantizations, as LiteRT's reshape.cc or topk_v2.cc do) and nodes that will run on the CPU
  fallback (no WebGPU kernel, or ``cpu_ops``: LiteRT's integer kernels run them exactly) keep
  integer tensors, with the same edge conversions around them: the requantization points the converter placed (a
  QUANTIZE between two scales, the input QUANTIZE of a float-I/O model) still round to
  their grid;
- an int8 / int16 RSQRT or SQRT whose input's zero point leaves codes below it (negative
  values, on which LiteRT fails the invoke) computes in float too, its node marked with the
  input's quantized tensor (``Node.quantized_input``): its kernel checks the codes its float
  input stands for, and ``invoke`` raises the cpu kernel's error (:mod:`.kernels.activations`).

The result matches LiteRT's integer kernels within a few quantization steps, not exactly
(float arithmetic rounds once at the end where the integer kernels round after every op).
``quantized="exact"`` leaves the graph alone: integer nodes then run LiteRT's integer
arithmetic, on the GPU where a kernel declares it (``gpulite ops``' *webgpu exact* column),
else on the CPU fallback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gpulite.backends.base import copy_graph
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import RAW_OPS, Op

MODES = ("float", "exact")
QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
_F32 = np.dtype(np.float32)
_CHECKED = (np.dtype(np.int8), np.dtype(np.int16))  # the dtypes LiteRT's quantized RSQRT and SQRT take
_F32_CODE = int(sg.TensorType.FLOAT32)


def check_mode(mode: object) -> str:
    if mode not in MODES:
        raise ValueError(f"quantized must be 'float' or 'exact', got {mode!r}")
    return str(mode)


def is_quantized(t: TensorInfo) -> bool:
    """An activation or constant that stores integer codes of real values."""
    return t.quant is not None and bool(np.size(t.quant.scale)) and t.dtype.kind in "iu"


def dequantized(t: TensorInfo) -> np.ndarray:
    """The real values of quantized constant ``t`` as float32 (per channel along ``axis``)."""
    q = t.quant
    assert q is not None and t.const is not None
    scale = np.asarray(q.scale, np.float32).reshape(-1)
    zp = np.asarray(q.zero_point, np.float32).reshape(-1)
    shape = [1] * t.const.ndim
    if scale.size > 1:
        shape[q.axis] = scale.size
    return ((t.const.astype(np.float32) - zp.reshape(shape)) * scale.reshape(shape)).astype(np.float32)


def _compares_codes(graph: Graph, node: Node) -> bool:
    """A comparison LiteRT runs on quantized codes as they are, scales aside (int16 LESS and the
    other ordering ones: ``cpu/kernels/logic.rescaled``), so its inputs must keep their codes."""
    from gpulite.backends.cpu.kernels.logic import COMPARISONS, rescaled

    if node.op not in COMPARISONS or not node.inputs:
        return False
    info = graph.tensors[node.inputs[0]]
    return is_quantized(info) and not rescaled(node.op, info)


# Ops whose LiteRT kernels copy or pick codes without reading the quantization (reshape.cc,
# gather.cc, topk_v2.cc, XNNPACK's 8-bit REDUCE_MAX / MIN, ...; the others refuse differing
# quantizations at prepare).
_COPY_OPS = frozenset({
    Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE, Op.GATHER, Op.GATHER_ND, Op.EMBEDDING_LOOKUP, Op.TILE,
    Op.BROADCAST_TO, Op.REVERSE_V2, Op.SLICE, Op.STRIDED_SLICE, Op.SPLIT, Op.SPLIT_V, Op.PACK, Op.UNPACK,
    Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH, Op.SELECT, Op.SELECT_V2, Op.RESIZE_NEAREST_NEIGHBOR, Op.TOPK_V2,
    Op.DYNAMIC_UPDATE_SLICE, Op.MATRIX_DIAG, Op.MATRIX_SET_DIAG, Op.REVERSE_SEQUENCE, Op.SPARSE_TO_DENSE,
    Op.DILATE, Op.FILL, Op.REDUCE_MAX, Op.REDUCE_MIN})


def _copies_across_scales(graph: Graph, node: Node) -> bool:
    """A code-copying op (:data:`_COPY_OPS`) with a quantized input whose scale or zero point differs
    from its output's: LiteRT's output holds the input's codes, which a float rewrite would
    requantize to other codes, so its tensors stay integer."""
    if node.op not in _COPY_OPS or not node.outputs or not is_quantized(out := graph.tensors[node.outputs[0]]):
        return False

    def key(t: TensorInfo) -> tuple:
        return tuple(np.ravel(t.quant.scale).tolist()), tuple(np.ravel(t.quant.zero_point).tolist())
    return any(i >= 0 and is_quantized(graph.tensors[i]) and key(graph.tensors[i]) != key(out) for i in node.inputs)


def _checks_domain(graph: Graph, node: Node) -> bool:
    """An int8 / int16 RSQRT or SQRT whose input can hold codes below its zero point (negative
    values: LiteRT fails the invoke, ``cpu/kernels/math_ops.input_domain``)."""
    from gpulite.backends.cpu.kernels.math_ops import DOMAIN_MESSAGES, input_domain

    if node.op not in DOMAIN_MESSAGES or not node.inputs or node.inputs[0] < 0:
        return False
    info = graph.tensors[node.inputs[0]]
    return info.dtype in _CHECKED and is_quantized(info) and input_domain(node, info) is not None


def float_graph(graph: Graph, on_cpu: Callable[[Node], bool] = lambda n: False) -> Graph:
    """``graph`` with its quantized tensors computed in float (module docstring); ``graph``
    itself when nothing is quantized. Never edits its argument.

    ``on_cpu(node)``: the node will run on the CPU fallback (no WebGPU kernel, or forced there);
    its tensors stay integer like a raw op's, so the CPU runs LiteRT's integer kernel on them."""
    acts = {t.index for t in graph.tensors if t.const is None and t.dtype in QUANT_DTYPES and is_quantized(t)}
    consts = [t for t in graph.tensors if t.const is not None and is_quantized(t)]
    if not acts and not consts:
        return graph
    g = copy_graph(graph)
    # Decided once, on the unrewritten graph (the rewrite below retypes and renumbers tensors).
    raw_nodes = {id(n) for n in g.nodes if n.op in RAW_OPS or not isinstance(n.op, Op) or n.op.is_custom
                 or on_cpu(n) or _compares_codes(graph, n) or _copies_across_scales(graph, n)}

    def _raw(node: Node) -> bool:
        return id(node) in raw_nodes

    for n in g.nodes:
        if not _raw(n) and _checks_domain(graph, n):
            n.quantized_input = graph.tensors[n.inputs[0]]

    readers = g.consumers()
    producer = {o: n for n in g.nodes for o in n.outputs}
    keep = set(g.inputs) | set(g.outputs)
    keep |= {t for n in g.nodes if _raw(n) for t in (*n.inputs, *n.outputs)}
    for t in consts:  # dequantized once here, unless a raw op reads its codes
        if not any(_raw(n) for n in readers.get(t.index, [])):
            g.tensors[t.index] = dataclasses.replace(t, dtype=_F32, const=dequantized(t), quant=None,
                                                     type_code=_F32_CODE)
    for i in acts - keep:
        g.tensors[i] = dataclasses.replace(g.tensors[i], dtype=_F32, quant=None, type_code=_F32_CODE)
    after: dict[int, list[Node]] = {}  # position in g.nodes (-1: before all) -> edge nodes
    next_index = max((n.index for n in g.nodes), default=-1) + 1

    def edge(op: Op, src: int, dst: int, at: int) -> None:
        nonlocal next_index
        after.setdefault(at, []).append(Node(next_index, op, (src,), (dst,), options=(
            sg.QuantizeOptions() if op == Op.QUANTIZE else sg.DequantizeOptions())))
        next_index += 1

    position = {id(n): k for k, n in enumerate(g.nodes)}
    for i in sorted(acts & keep):
        p = producer.get(i)
        users = [n for n in readers.get(i, []) if not _raw(n)]
        own_float = p is not None and not _raw(p)
        if not users and not own_float:
            continue
        twin = len(g.tensors)
        t = g.tensors[i]
        g.tensors.append(dataclasses.replace(t, index=twin, name=f"{t.name}/float", dtype=_F32, quant=None,
                                             type_code=_F32_CODE, const=None))
        at = -1 if p is None else position[id(p)]
        if own_float:  # p computes in float into the twin; the edge quantizes it into i
            assert p is not None
            p.outputs = tuple(twin if o == i else o for o in p.outputs)
            edge(Op.QUANTIZE, twin, i, at)
        else:  # i arrives as codes (a graph input or a raw op's output)
            edge(Op.DEQUANTIZE, i, twin, at)
        for n in users:
            n.inputs = tuple(twin if x == i else x for x in n.inputs)
    nodes = list(after.get(-1, []))
    for k, n in enumerate(g.nodes):
        nodes.append(n)
        nodes.extend(after.get(k, []))
    g.nodes = nodes
    return g
