"""Give every tensor its shape for the current input shapes, and fold what is then known.

Models exported with a dynamic batch (``shape_signature`` -1) store 1, or anything, for the
open dimensions, and compute shapes at run time: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE,
with GATHER, CONCATENATION, REDUCE_PROD, CAST, FILL, ... on the way. At ``allocate_tensors``
the Interpreter calls :func:`resolve` on a copy of the model's graph with the inputs' current
shapes. Walking the nodes in run order, it

1. checks the node against its op's table entry (:func:`~gpulite.graph.validate.check_node`);
2. sets its output shapes with the op's shape rule (:mod:`gpulite.graph.shapes`), and checks
   them against the shapes the file stores, except in dimensions the shape signature leaves
   open and downstream of a resized input (LiteRT recomputes every shape in ``Prepare``);
3. folds it when its values are known now: a SHAPE or RANK of a tensor whose shape is known
   here, or a node whose inputs are all constants (a folded SHAPE's, say) and whose outputs
   are small. Folding runs the node's own CPU kernel on those constants (``evaluate``: the
   one definition of each op), and the node leaves the graph.

So a RESHAPE, FILL or BROADCAST_TO fed by such a chain gets a constant shape input, every
tensor a static shape, and the backends a static plan (the shape chain runs nowhere).

Outputs whose shape depends on the data (WHERE's, a rule registered ``bounded=True``) are
sized for their upper bound (``TensorInfo.bounded``); their kernel records the real shape at
each invoke in ``MemoryPlan.extents``. The nodes that read such a tensor, a node whose output
shape is an input's run-time *value* where the stored shape cannot stand in (a RESHAPE, FILL,
RANGE, ... after a resize or into a dimension the signature leaves open), and the nodes after
them form the :class:`Tail`: they leave the static graph (which keeps the tensors they read
as extra outputs, after the model's) and run after each invoke on the CPU kernels, as LiteRT runs dynamic tensors: the
values of that invoke are their constants, and each is folded in turn (``Tail.run``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.shapes import Shape, is_bounded, output_shapes
from gpulite.graph.validate import check_inputs, check_node
from gpulite.model.opdefs import Op

# Runs a one-node graph whose inputs are all constants on the CPU kernels; returns its outputs.
Evaluate = Callable[[Graph], list[np.ndarray]]

FOLD_MAX_ELEMENTS = 1 << 16  # a bigger result stays a node (it would be a weight upload otherwise)
_SHAPE_ONLY = (Op.SHAPE, Op.RANK)  # their value is their input's shape
# Ops whose output shape is given by the values of these inputs.
_SHAPE_FROM_VALUES: dict[str, tuple[int, ...]] = {
    Op.RESHAPE: (1,), Op.FILL: (0,), Op.BROADCAST_TO: (1,), Op.TILE: (1,), Op.RANGE: (0, 1, 2), Op.ONE_HOT: (1,)}
_NEVER_FOLDED = frozenset({  # a different value at each invoke, or state
    Op.RANDOM_STANDARD_NORMAL, Op.RANDOM_UNIFORM, Op.MULTINOMIAL, Op.VAR_HANDLE, Op.READ_VARIABLE,
    Op.ASSIGN_VARIABLE, Op.CALL_ONCE, Op.CALL, Op.IF, Op.WHILE, Op.HASHTABLE, Op.HASHTABLE_FIND,
    Op.HASHTABLE_IMPORT, Op.HASHTABLE_SIZE,
})


@dataclass(frozen=True)
class Tail:
    """The nodes downstream of a data-dependent shape, in run order (see the module docstring).

    ``reads``: the tensors they take from the static graph (its outputs or inputs); ``makes``:
    the tensors they make, whose values exist only after an invoke.
    """

    nodes: tuple[Node, ...] = ()
    reads: tuple[int, ...] = ()
    makes: frozenset[int] = frozenset()

    def run(self, g: Graph, values: Mapping[int, np.ndarray], evaluate: Evaluate) -> dict[int, np.ndarray]:
        """The tensors the tail makes, from ``values`` of its ``reads`` (this invoke's), on the CPU kernels."""
        known = {i: _known(g.tensors[i], v) for i, v in values.items()}
        made: dict[int, np.ndarray] = {}
        for n in self.nodes:
            one = _one_node(n, lambda i: known.get(i, g.tensors[i]))
            shapes = output_shapes(one, one.nodes[0])
            if shapes is None:
                raise ShapeError(f"node {n.index} ({n.op}) has no shape rule, so it cannot run on a shape that "
                                 "comes from the data")
            for o, s in zip(one.outputs, shapes, strict=True):
                one.tensors[o].shape = s
            for o, v in zip(n.outputs, evaluate(one), strict=True):
                made[o], known[o] = v, _known(g.tensors[o], v)
        return made


def _known(t: TensorInfo, value: np.ndarray) -> TensorInfo:
    return dataclasses.replace(t, const=value, shape=value.shape, bounded=False)


def resolve(model: Graph, input_shapes: Mapping[int, Shape], evaluate: Evaluate,
            backend: str) -> tuple[Graph, Tail]:
    """A copy of ``model`` with the inputs of ``input_shapes``, every shape set, foldable nodes folded,
    and the :class:`Tail` of nodes that can only run once the data is known.

    Parameters
    ----------
    model : Graph
        The model's graph, nodes in run order; left unchanged.
    input_shapes : mapping
        Graph input tensor -> its current shape.
    evaluate : callable
        Runs a one-node graph of constants (see :data:`Evaluate`).
    backend : str
        Where the graph will run, for the errors.

    Returns
    -------
    graph, tail : Graph, Tail
        The static graph (outputs: the model's but those the tail makes, then what the tail
        reads) and the tail.

    Raises
    ------
    ModelError, ShapeError, UnsupportedOpError
        A malformed node, shapes that do not fit, a node gpulite cannot run.
    """
    g = Graph([dataclasses.replace(t) for t in model.tensors], list(model.nodes), model.inputs, model.outputs,
              model.name, model.subgraphs)
    check_inputs(g)
    for i, s in input_shapes.items():
        g.tensors[i].shape = tuple(s)
    moved = {i for i in g.inputs if g.tensors[i].shape != model.tensors[i].shape}  # shapes that follow a resize
    keep: list[Node] = []
    tail: list[Node] = []
    late: set[int] = set()  # tensors whose shape comes from the data
    for n in g.nodes:
        check_node(g, n, backend)
        if any(i in late for i in n.inputs) or _waits_for_values(g, n, moved):
            tail.append(n)
            late.update(n.outputs)
            continue
        _set_shapes(g, n, moved)
        late.update(o for o in n.outputs if g.tensors[o].bounded)
        if not _fold(g, n, evaluate):
            keep.append(n)
    makes = frozenset(o for n in tail for o in n.outputs)
    reads = tuple(dict.fromkeys(i for n in tail for i in n.inputs
                                if i >= 0 and i not in makes and not g.tensors[i].is_const))
    g.nodes = keep
    g.outputs = tuple(dict.fromkeys([*(o for o in g.outputs if o not in makes),
                                     *(i for i in reads if i not in g.inputs)]))
    return g, Tail(tuple(tail), reads, makes)


def _waits_for_values(g: Graph, n: Node, moved: set[int]) -> bool:
    """Whether ``n``'s output shape is a run-time value, which the stored shape cannot stand in for."""
    runtime = [p for p in _SHAPE_FROM_VALUES.get(n.op, ()) if p < len(n.inputs) and n.inputs[p] >= 0
               and not g.tensors[n.inputs[p]].is_const]
    if not runtime or not (any(i in moved for i in n.inputs)
                           or any(-1 in g.tensors[o].shape_signature for o in n.outputs)):
        return False
    try:
        output_shapes(g, n)
    except ShapeError:
        return True
    return False  # the options give the shape (a RESHAPE's new_shape)


def _set_shapes(g: Graph, n: Node, moved: set[int]) -> None:
    follows = any(i in moved for i in n.inputs)
    try:
        outs = output_shapes(g, n)
    except ShapeError:
        if follows:
            raise
        return  # a rule that cannot decide (a value known only at run time) leaves the check to the kernel
    if outs is None:
        if follows:
            stored = [g.tensors[o].shape for o in n.outputs]
            raise ShapeError(f"node {n.index} ({n.op}) has no shape rule, so its outputs cannot follow a resized "
                             f"input (stored output shapes {stored})")
        return
    bounded = is_bounded(n.op)
    for o, s in zip(n.outputs, outs, strict=True):
        t = g.tensors[o]
        if not (follows or bounded or _fits(t, s) or _unknown(n, t)):
            raise ShapeError(f"node {n.index} ({n.op}): output tensor {o} ({t.name!r}) is stored with shape "
                             f"{list(t.shape)}, but its inputs give {list(s)}")
        if follows or s != t.shape:
            moved.add(o)
        t.shape, t.bounded = s, bounded


def _unknown(n: Node, t: TensorInfo) -> bool:
    """A custom op's output stored with shape [] and no signature: the converter could not infer it
    (TFLite_Detection_PostProcess's outputs), and LiteRT sizes it in the op's Prepare."""
    return getattr(n.op, "is_custom", True) and t.shape == () and not t.shape_signature


def _fits(t: TensorInfo, shape: Shape) -> bool:
    """Whether ``shape`` is the stored one, but for dimensions the signature leaves open."""
    sig = t.shape_signature
    return t.shape == shape or (len(sig) == len(t.shape) == len(shape) and all(
        a == b or s == -1 for a, b, s in zip(t.shape, shape, sig, strict=True)))


def _fold(g: Graph, n: Node, evaluate: Evaluate) -> bool:
    """Replace ``n``'s outputs by their values when they are known now (see the module docstring)."""
    present = [i for i in n.inputs if i >= 0]
    outs = [g.tensors[o] for o in n.outputs]
    if (n.op in _NEVER_FOLDED or getattr(n.op, "is_custom", True) or not present or is_bounded(n.op)
            or any(o in g.outputs for o in n.outputs)
            or any(int(np.prod(t.shape, dtype=np.int64)) > FOLD_MAX_ELEMENTS for t in outs)):
        return False
    if n.op in _SHAPE_ONLY:
        if g.tensors[present[0]].bounded:
            return False
    elif not all(g.tensors[i].is_const for i in present):
        return False
    try:
        values = evaluate(_one_node(n, lambda i: g.tensors[i]))
    except UnsupportedOpError:
        return False  # no CPU kernel takes it: it stays a node
    for t, v in zip(outs, values, strict=True):
        t.const, t.folded = v, True
    return True


def _one_node(n: Node, info: Callable[[int], TensorInfo]) -> Graph:
    """``n`` alone, its inputs constants (SHAPE/RANK's: a placeholder of the input's shape);
    ``info(i)`` is tensor i as known now."""
    tensors: list[TensorInfo] = []

    def add(i: int, const: np.ndarray | None) -> int:
        tensors.append(dataclasses.replace(info(i), index=len(tensors), const=const))
        return len(tensors) - 1

    ins = []
    for i in n.inputs:
        t = info(i) if i >= 0 else None
        if t is None:
            ins.append(-1)
        else:
            value = t.const if t.is_const else np.broadcast_to(np.zeros((), t.dtype), t.shape)
            ins.append(add(i, value))
    outs = tuple(add(o, None) for o in n.outputs)
    return Graph(tensors, [dataclasses.replace(n, inputs=tuple(ins), outputs=outs)], (), outs, n.op.lower())
