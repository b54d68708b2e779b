"""The graph IR every backend consumes.

A :class:`Graph` is built once from a model subgraph. Nodes keep the model's operator
index (``node.index``) so errors name the node a user sees in Netron; tensors keep the
model's tensor index. Shapes live on :class:`TensorInfo` and change only through
:func:`gpulite.graph.shapes.propagate` after an input resize.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpulite.model import schema_gen as sg
from gpulite.model.reader import Model, Quantization, Sparsity, SubgraphDef

ACTIVATIONS: dict[int, str | None] = {
    sg.ActivationFunctionType.NONE: None, sg.ActivationFunctionType.RELU: "RELU",
    sg.ActivationFunctionType.RELU_N1_TO_1: "RELU_N1_TO_1", sg.ActivationFunctionType.RELU6: "RELU6",
    sg.ActivationFunctionType.TANH: "TANH", sg.ActivationFunctionType.SIGN_BIT: "SIGN_BIT",
}


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

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def is_const(self) -> bool:
        return self.const is not None


@dataclass
class Node:
    index: int  # operator index in the model
    op: str
    inputs: tuple[int, ...]  # tensor indices; -1 = omitted optional input
    outputs: tuple[int, ...]
    options: object | None = None
    custom_options: bytes | None = None
    version: int = 1
    activation: str | None = None  # fused activation: RELU, RELU6, RELU_N1_TO_1, TANH, SIGN_BIT
    attrs: dict = field(default_factory=dict)  # facts passes add (e.g. "fused_prelu")


@dataclass
class Graph:
    tensors: list[TensorInfo]
    nodes: list[Node]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    name: str = ""

    @classmethod
    def from_model(cls, model: Model, subgraph: int = 0) -> Graph:
        return cls.from_subgraph(model.subgraphs[subgraph])

    @classmethod
    def from_subgraph(cls, sgd: SubgraphDef) -> Graph:
        tensors = [
            TensorInfo(
                index=t.index, name=t.name, shape=tuple(t.shape), dtype=t.dtype, quant=t.quantization,
                const=t.data, sparsity=t.sparsity, shape_signature=tuple(t.shape_signature),
                type_code=t.type_code,
            )
            for t in sgd.tensors
        ]
        nodes = []
        for o in sgd.operators:
            act = getattr(o.options, "fused_activation_function", 0)
            nodes.append(Node(
                index=o.index, op=o.op, inputs=o.inputs, outputs=o.outputs, options=o.options,
                custom_options=o.custom_options, version=o.version, activation=ACTIVATIONS.get(act),
            ))
        return cls(tensors, nodes, tuple(sgd.inputs), tuple(sgd.outputs), sgd.name)

    def consumers(self) -> dict[int, list[Node]]:
        out: dict[int, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i >= 0:
                    out.setdefault(i, []).append(n)
        return out
