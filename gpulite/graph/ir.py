"""The graph IR every backend consumes.

A :class:`Graph` is built once from a model subgraph. Nodes keep the model's operator
index (``node.index``) so errors name the node a user sees in Netron; tensors keep the
model's tensor index. Shapes live on :class:`TensorInfo`; :func:`gpulite.graph.resolve.resolve` sets them for the
current input shapes at ``allocate_tensors``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from gpulite.model.opdefs import FusedActivation, OpName, op_of
from gpulite.model.reader import Model, Quantization, Sparsity, SubgraphDef, TensorDef


@dataclass
class TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    quant: Quantization | None = None
    const: np.ndarray | None = None  # value known at load (weights, folded results)
    sparsity: Sparsity | None = None
    shape_signature: tuple[int, ...] = ()
    type_code: int = 0
    is_variable: bool = False  # state a kernel keeps across invokes (LSTM states): zero at allocate, then its own
    initial: np.ndarray | None = None  # a variable's value at allocate instead of zeros (a folded DEQUANTIZE's)
    # The shape is an upper bound: the op that makes the tensor decides its real shape from the
    # data at each invoke (WHERE) and records it in the executable's MemoryPlan.extents.
    bounded: bool = False
    # The const was computed at load from nodes LiteRT runs at invoke (resolve._fold): kernels
    # that follow LiteRT's choice of kernel by what is constant in the file ask (TRANSPOSE_CONV).
    folded: bool = False

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def is_const(self) -> bool:
        return self.const is not None

    def reset_value(self) -> np.ndarray:
        """What LiteRT's ``ResetVariableTensor`` sets a variable to (at allocate and
        ``reset_all_variables``): zeros, but an int8 tensor's zero point (a full-integer LSTM's
        output state starts at the real value 0)."""
        q = self.quant
        fill = int(q.zero_point.reshape(-1)[0]) if self.dtype == np.int8 and q is not None and q.zero_point.size else 0
        return np.full(self.shape, fill, self.dtype)


@dataclass(frozen=True)
class ResidualAdd:
    """Epilogue step: add the node's input ``slot`` (an ADD's other operand) to the output, or,
    when ``channels`` is fewer than the output's, into its first ``channels`` channels."""
    slot: int
    channels: int
    kind: ClassVar[str] = "add"


@dataclass(frozen=True)
class Activation:
    """Epilogue step: a clamp (a fused ADD's activation, or a RELU-family node's)."""
    activation: FusedActivation
    kind: ClassVar[str] = "act"


@dataclass(frozen=True)
class PRelu:
    """Epilogue step: PReLU with the per-channel alpha of the node's input ``slot``."""
    slot: int
    kind: ClassVar[str] = "prelu"


@dataclass(frozen=True)
class HardSwish:
    """Epilogue step: HARD_SWISH."""
    kind: ClassVar[str] = "hard_swish"


@dataclass(frozen=True)
class Logistic:
    """Epilogue step: LOGISTIC."""
    kind: ClassVar[str] = "logistic"


EpilogueStep = ResidualAdd | Activation | PRelu | HardSwish | Logistic


@dataclass(frozen=True)
class Pointwise:
    """A 1x1 CONV_2D merged into the node that computes its input (a thin depthwise: the TFLite
    GPU delegate's depthwise + 1x1 merge), run on each output pixel in the same kernel. Its
    weights ``[Cout, 1, 1, C]`` and bias are the node's inputs at ``weights`` and ``bias``
    (-1: none); ``activation`` is its fused activation. The node's own activation applies to
    the intermediate pixel, its ``epilogue`` to the 1x1's output, which is the node's output."""
    weights: int
    bias: int
    activation: FusedActivation


@dataclass
class Node:
    """One operator. ``op`` and ``activation`` given as plain strings (or None for no
    activation) are turned into :class:`~gpulite.model.opdefs.Op` /
    :class:`~gpulite.model.opdefs.FusedActivation` members."""

    index: int  # operator index in the model
    op: OpName
    inputs: tuple[int, ...]  # tensor indices; -1 = omitted optional input
    outputs: tuple[int, ...]
    options: object | None = None  # builtin options table, or a custom op's decoded options
    custom_options: bytes | None = None  # raw bytes, for a custom op gpulite has no decoder for
    version: int = 1
    activation: FusedActivation = FusedActivation.NONE
    # What gpulite.graph.fusion folded into the node (what a backend's rules allowed):
    pads: tuple[int, int, int, int] | None = None  # a zero PAD's (top, bottom, left, right), added to the padding
    prelu_alpha: int | None = None  # a PRELU's constant alpha tensor, applied to the output after the activation
    epilogue: tuple[EpilogueStep, ...] = ()  # elementwise steps run on the output after the activation
    pointwise: Pointwise | None = None  # a following 1x1 CONV_2D run in the same kernel
    input_scale: int | None = None  # input slot of a per-channel factor input 0 is multiplied by as it is read
    intermediates: tuple[int, ...] = ()  # the operator's intermediate tensors (a full-integer LSTM's gate scales)
    # A float32 node standing for a quantized one (webgpu's quantized="float" rewrite): its input's
    # quantized tensor, where the node must check the codes its float input stands for (RSQRT, SQRT)
    quantized_input: TensorInfo | None = None

    def __post_init__(self) -> None:
        self.op = op_of(self.op)
        self.activation = FusedActivation(self.activation or "NONE")


def _empty_const(t: TensorDef) -> np.ndarray | None:
    """The value of a tensor no node writes that holds no elements (a constant of shape ``(0,)``
    such as the converter's empty RESHAPE shape, stored with an empty buffer): an empty array,
    so it is a constant like any other. Any other unwritten tensor stays without a value."""
    if 0 in t.shape and t.dtype != np.object_:
        return np.zeros(t.shape, t.dtype)
    return None


@dataclass
class Graph:
    tensors: list[TensorInfo]
    nodes: list[Node]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    name: str = ""
    # Every subgraph of the model by its index (this graph among them), shared by all of them: what
    # control-flow nodes (WHILE, IF, CALL_ONCE) name. Empty for a graph not read from a model.
    subgraphs: list[Graph] = field(default_factory=list, repr=False, compare=False)
    # Tensors whose bytes lie inside another's (view -> (that tensor, byte offset)): RESHAPE-like
    # outputs (offset 0) and CONCATENATION inputs (their slice of the output) that a backend's
    # prepare made views (graph.fusion); plan_memory places them there.
    views: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_model(cls, model: Model, subgraph: int = 0) -> Graph:
        return cls.from_subgraph(model.subgraphs[subgraph])

    @classmethod
    def from_subgraph(cls, sgd: SubgraphDef) -> Graph:
        written = {*sgd.inputs, *(o for op in sgd.operators for o in op.outputs)}
        tensors = [
            TensorInfo(
                index=t.index, name=t.name, shape=tuple(t.shape), dtype=t.dtype, quant=t.quantization,
                const=_empty_const(t) if t.data is None and t.index not in written else t.data,
                sparsity=t.sparsity, shape_signature=tuple(t.shape_signature), type_code=t.type_code,
                is_variable=t.is_variable,
            )
            for t in sgd.tensors
        ]
        nodes = []
        for o in sgd.operators:
            act = FusedActivation.of_options(o.options)
            nodes.append(Node(
                index=o.index, op=o.op, inputs=o.inputs, outputs=o.outputs, options=o.options,
                custom_options=o.custom_options, version=o.version, activation=act,
                intermediates=tuple(o.intermediates),
            ))
        return cls(tensors, nodes, tuple(sgd.inputs), tuple(sgd.outputs), sgd.name)

    def consumers(self) -> dict[int, list[Node]]:
        out: dict[int, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i >= 0:
                    out.setdefault(i, []).append(n)
        return out
