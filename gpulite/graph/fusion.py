"""Fusion: one graph pass that folds nodes into the node computing their input.

:func:`fuse` returns a new graph, its nodes in execution order; the graph it is given is
never modified (nodes are copied, and the constants the pass makes are appended to a copy
of the tensor list; the :class:`TensorInfo` objects are shared and left unchanged).

A rewrite is made where it gives the same numbers (float32, unquantized tensors only; the
intermediate read by the fused node alone and no graph output) and where ``rules``, the
backend's :class:`FusionRules`, says its kernel runs the fused node. The rewrites, in the
order they run:

- **activation**: a RELU, RELU6 or RELU_N1_TO_1 node becomes its producer's ``activation``
  (an op whose TFLite options carry a fused activation, and that has none yet).
- **prelu**: a PRELU with a constant alpha becomes its producer's ``prelu_alpha`` (the alpha
  tensor); the producer writes the PRELU's output.
- **pad**: a zero PAD/PADV2 of H and W only, whose output only CONV_2D or DEPTHWISE_CONV_2D
  ops read (as their input), disappears; each conv reads the unpadded tensor with the pads
  in ``pads`` = (top, bottom, left, right), added to its own padding.
- **depthwise bias**: a DEPTHWISE_CONV_2D without activation whose output feeds only 1x1
  CONV_2Ds (which never pad) has its bias moved into theirs: ``conv(dw + b) = conv(dw) +
  W @ b`` (in float64, stored as a new float32 constant).
- **pointwise**: a 1x1 stride-1 CONV_2D with constant weights whose input is the output of a
  DEPTHWISE_CONV_2D, read by nothing else, is merged into it as ``pointwise``
  (:class:`~gpulite.graph.ir.Pointwise`: its weights and bias join the depthwise's inputs after
  its bias slot); the depthwise writes the conv's output.
- **epilogue**: elementwise nodes after a node, each the sole reader of the previous
  result, become steps of its ``epilogue``, run on its output after its activation:
  :class:`~gpulite.graph.ir.ResidualAdd` (an ADD's other operand, or, when a zero PAD adding
  channels at the end fed the ADD, the unpadded tensor into the first channels, that PAD
  dropped), :class:`~gpulite.graph.ir.Activation` (the ADD's fused clamp, or a RELU-family
  node), :class:`~gpulite.graph.ir.PRelu` (a per-channel constant alpha),
  :class:`~gpulite.graph.ir.HardSwish` and :class:`~gpulite.graph.ir.Logistic` (an ADD
  carrying a ``prelu_alpha`` becomes a residual add and a PReLU step). A residual
  or alpha joins the node's inputs, so the memory plan keeps it alive. A residual must be
  computed before the node runs: its producers are moved ahead of the node when they do
  not depend on it (a MAX_POOL), or else the node is moved down to where the ADD was.
- **input scale**: a MUL of a tensor by a per-channel factor (``[..., 1, C]``, e.g. the
  squeeze-and-excite gate), read only by a 1x1 CONV_2D as its input, disappears: the conv
  reads the tensor and multiplies each value by its channel's factor as it loads it
  (``input_scale``: the factor's slot among its inputs, appended).
- **views**: a RESHAPE, SQUEEZE or EXPAND_DIMS whose output has its input's dtype and bytes
  (the input no graph input, variable or constant) has its output recorded in
  ``graph.views`` as lying in its input at offset 0; a CONCATENATION (no activation, one
  dtype and quantization) whose inputs are consecutive blocks of its output (every axis
  before the concatenated one of size 1), each 16-byte aligned there, has each input (or the
  tensor that input is a RESHAPE view of) recorded as lying in the output at its block's
  offset, so its producer writes straight into its slice.
  :func:`~gpulite.graph.plan.plan_memory` places views there, and a kernel finding its input
  already where it would copy it has nothing to move. The nodes stay in the graph (a CPU
  kernel's copy onto itself is harmless).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpulite.graph.ir import (
    Activation,
    EpilogueStep,
    Graph,
    HardSwish,
    Logistic,
    Node,
    Pointwise,
    PRelu,
    ResidualAdd,
    TensorInfo,
)
from gpulite.graph.plan import topological_order
from gpulite.model.opdefs import FusedActivation, Op

_F32 = np.dtype(np.float32)
CONVS = (Op.CONV_2D, Op.DEPTHWISE_CONV_2D)
# Ops whose TFLite options carry a fused activation (their kernels apply node.activation).
VIEW_OPS = (Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS)
ACTIVATION_PRODUCERS = frozenset({Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED, Op.ADD, Op.SUB, Op.MUL, Op.DIV,
                                  Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.CONCATENATION, Op.TRANSPOSE_CONV})


class FusionRules:
    """What a backend's kernels run fused. This base class allows nothing.

    A backend subclasses it and answers True where its kernel for the receiving node runs
    the fused form. :func:`fuse` asks only once it has checked that the rewrite is valid
    (see the module docstring), and before it changes anything for it.
    """

    def activation(self, g: Graph, producer: Node, act: Node) -> bool:
        """Whether ``producer`` may take the RELU-family node ``act`` as its ``activation``."""
        return False

    def prelu(self, g: Graph, producer: Node, prelu: Node) -> bool:
        """Whether ``producer`` may take the PRELU node ``prelu`` as its ``prelu_alpha``."""
        return False

    def pad(self, g: Graph, pad: Node, conv: Node) -> bool:
        """Whether ``conv`` may read the input of the zero ``pad`` with its pads in ``conv.pads``."""
        return False

    def depthwise_bias(self, g: Graph, dw: Node, conv: Node) -> bool:
        """Whether the bias of ``dw`` may move into that of the 1x1 ``conv`` reading its output."""
        return False

    def pointwise(self, g: Graph, dw: Node, conv: Node) -> bool:
        """Whether the depthwise ``dw`` may run the 1x1 ``conv`` reading its output as its ``pointwise``."""
        return False

    def epilogue(self, g: Graph, producer: Node, node: Node) -> bool:
        """Whether ``producer`` may run the elementwise ``node`` as a step of its ``epilogue``."""
        return False

    def input_scale(self, g: Graph, mul: Node, conv: Node) -> bool:
        """Whether ``conv`` may read the MUL's tensor operand and apply its per-channel factor itself."""
        return False

    def view(self, g: Graph, node: Node) -> bool:
        """Whether the RESHAPE-like ``node``'s output may share its input's bytes, or the
        CONCATENATION ``node``'s inputs lie in its output (``graph.views``)."""
        return False


def fuse(graph: Graph, rules: FusionRules) -> Graph:
    """The fused copy of ``graph`` (see the module docstring); ``graph`` is left as it was.

    Raises :class:`~gpulite.errors.ModelError` when the graph has no execution order
    (:func:`~gpulite.graph.plan.topological_order`).
    """
    f = _Fuser(graph, rules)
    f.activations()
    f.prelus()
    f.pads()
    f.depthwise_biases()
    f.pointwise_merges()
    f.epilogues()
    f.input_scales()
    f.views()
    return f.g


class _Fuser:
    def __init__(self, graph: Graph, rules: FusionRules) -> None:
        nodes = [dataclasses.replace(n) for n in topological_order(graph)]
        self.g = Graph(list(graph.tensors), nodes, graph.inputs, graph.outputs, graph.name, graph.subgraphs,
                       dict(graph.views))
        self.rules = rules
        self.dropped: set[int] = set()
        self.reindex()

    # -- bookkeeping ----------------------------------------------------------------------
    def reindex(self) -> None:
        self.g.nodes = [n for n in self.g.nodes if id(n) not in self.dropped]
        self.dropped.clear()
        self.pos = {id(n): k for k, n in enumerate(self.g.nodes)}
        self.producer = {o: n for n in self.g.nodes for o in n.outputs}
        self.consumers = self.g.consumers()

    def t(self, i: int) -> TensorInfo:
        return self.g.tensors[i]

    def is_float(self, *idx: int) -> bool:
        return all(i >= 0 and self.t(i).dtype == _F32 and self.t(i).quant is None for i in idx)

    def only_reader(self, tensor: int) -> Node | None:
        """The one node reading ``tensor`` (once), or None; graph outputs have no such node."""
        cons = self.consumers.get(tensor, [])
        if tensor in self.g.outputs or len(cons) != 1:
            return None
        return cons[0]

    @staticmethod
    def plain(n: Node) -> bool:
        """Nothing is fused after the node's activation yet."""
        return n.prelu_alpha is None and not n.epilogue

    def hoist(self, tensor: int, node: Node, depth: int = 0) -> bool:
        """Make ``tensor`` ready before ``node`` runs, moving its producers (and theirs, a few
        levels deep) to just before ``node`` when they do not depend on it; False if they do."""
        p = self.producer.get(tensor)
        if p is None or self.pos[id(p)] < self.pos[id(node)]:
            return True
        if p is node or depth > 4 or id(p) in self.dropped:
            return False
        if not all(i < 0 or self.hoist(i, node, depth + 1) for i in p.inputs):
            return False
        nodes = self.g.nodes
        nodes.remove(p)
        nodes.insert(nodes.index(node), p)
        self.pos = {id(n): k for k, n in enumerate(nodes)}
        return True

    def sink(self, node: Node, before: Node) -> None:
        """Move ``node`` to just before ``before``: allowed when nothing in between reads its
        output (``before`` is its only reader)."""
        nodes = self.g.nodes
        nodes.remove(node)
        nodes.insert(nodes.index(before), node)
        self.pos = {id(n): k for k, n in enumerate(nodes)}

    def add_const(self, value: np.ndarray, name: str) -> int:
        idx = len(self.g.tensors)
        self.g.tensors.append(TensorInfo(idx, name, tuple(value.shape), value.dtype, const=value))
        return idx

    # -- rewrites -------------------------------------------------------------------------
    def activations(self) -> None:
        for n in self.g.nodes:
            act = FusedActivation.of_op(n.op)  # RELU, RELU6 and RELU_N1_TO_1 are their own clamps
            if act is None or len(n.inputs) != 1 or len(n.outputs) != 1:
                continue  # malformed arity: left for the kernel to reject at allocate_tensors
            src = n.inputs[0]
            p = self.producer.get(src)
            if (p is None or p.op not in ACTIVATION_PRODUCERS or p.activation or not self.plain(p)
                    or p.outputs[0] != src or self.only_reader(src) is not n or not self.is_float(src)
                    or not self.rules.activation(self.g, p, n)):
                continue
            p.activation = act
            p.outputs = (n.outputs[0], *p.outputs[1:])
            self.dropped.add(id(n))
        self.reindex()

    def prelus(self) -> None:
        for n in self.g.nodes:
            if n.op != Op.PRELU or len(n.inputs) != 2 or len(n.outputs) != 1:
                continue
            src, alpha = n.inputs
            p = self.producer.get(src)
            if (p is None or p.activation or not self.plain(p) or len(p.outputs) != 1
                    or self.only_reader(src) is not n or not self.is_float(src, n.outputs[0])
                    or alpha < 0 or not self.t(alpha).is_const or not self.rules.prelu(self.g, p, n)):
                continue
            p.prelu_alpha = alpha
            p.outputs = (n.outputs[0],)
            self.dropped.add(id(n))
        self.reindex()

    def pads(self) -> None:
        for p in self.g.nodes:
            if p.op not in (Op.PAD, Op.PADV2) or len(p.inputs) < 2 or min(p.inputs[:2]) < 0 or len(p.outputs) != 1:
                continue
            out = p.outputs[0]
            readers = self.consumers.get(out, [])
            if not readers or out in self.g.outputs or not self.is_float(p.inputs[0], out):
                continue
            if not all(n.op in CONVS and n.pads is None and n.inputs and n.inputs[0] == out
                       and out not in n.inputs[1:] and self.is_float(n.outputs[0]) for n in readers):
                continue
            pads = self.t(p.inputs[1]).const
            if pads is None or np.shape(pads) != (4, 2) or len(self.t(p.inputs[0]).shape) != 4:
                continue
            pads = np.asarray(pads).astype(np.int64)
            if (pads < 0).any() or pads[0].any() or pads[3].any():
                continue
            if len(p.inputs) > 2 and p.inputs[2] >= 0:  # PAD takes a third input as PADV2 does
                v = self.t(p.inputs[2]).const
                if v is None or np.size(v) != 1 or float(np.asarray(v).reshape(())) != 0.0:
                    continue
            if not all(self.rules.pad(self.g, p, n) for n in readers):
                continue
            for n in readers:
                n.inputs = (p.inputs[0], *n.inputs[1:])
                n.pads = (int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1]))
            self.dropped.add(id(p))
        self.reindex()

    def depthwise_biases(self) -> None:
        for dw in self.g.nodes:
            if (dw.op != Op.DEPTHWISE_CONV_2D or dw.activation or not self.plain(dw)
                    or len(dw.inputs) < 3 or len(dw.outputs) != 1 or min(dw.inputs[:3]) < 0
                    or not self.is_float(dw.inputs[0], dw.outputs[0])):
                continue
            b = self.t(dw.inputs[2]).const
            out = dw.outputs[0]
            cons = self.consumers.get(out, [])
            if b is None or b.dtype != _F32 or out in self.g.outputs or not cons:
                continue
            if len(self.t(out).shape) != 4:
                continue  # malformed: left for the kernel to reject
            c_out = self.t(out).shape[-1]
            if b.size != c_out or not all(self._foldable_1x1(c, out, c_out) for c in cons):
                continue
            if not all(self.rules.depthwise_bias(self.g, dw, c) for c in cons):
                continue
            b64 = b.reshape(-1).astype(np.float64)
            for c in cons:
                w = self.t(c.inputs[1]).const
                cb = self.t(c.inputs[2]).const if len(c.inputs) > 2 and c.inputs[2] >= 0 else None
                assert w is not None  # checked by _foldable_1x1, as a constant bias
                o = w.shape[0]
                nb = w.reshape(o, c_out).astype(np.float64) @ b64
                if cb is not None:
                    nb += cb.reshape(o).astype(np.float64)
                idx = self.add_const(nb.astype(np.float32), f"folded_bias_{c.index}")
                c.inputs = (c.inputs[0], c.inputs[1], idx, *tuple(c.inputs[3:]))
            dw.inputs = (dw.inputs[0], dw.inputs[1], -1, *tuple(dw.inputs[3:]))
        self.reindex()

    def _foldable_1x1(self, c: Node, tensor: int, channels: int) -> bool:
        if (c.op != Op.CONV_2D or len(c.inputs) < 2 or len(c.outputs) != 1 or c.inputs[0] != tensor
                or c.inputs[1] < 0 or tensor in c.inputs[1:]):
            return False
        if not self.is_float(c.inputs[0], c.outputs[0]) or c.pads is not None:
            return False
        w = self.t(c.inputs[1]).const
        if w is None or w.dtype != _F32 or w.ndim != 4 or w.shape[1:] != (1, 1, channels):
            return False
        if getattr(c.options, "dilation_h_factor", 1) < 1 or getattr(c.options, "dilation_w_factor", 1) < 1:
            return False
        if len(c.inputs) < 3 or c.inputs[2] < 0:
            return True
        b = self.t(c.inputs[2]).const
        return b is not None and b.size == w.shape[0]

    def pointwise_merges(self) -> None:
        for dw in self.g.nodes:
            if (dw.op != Op.DEPTHWISE_CONV_2D or dw.pointwise is not None or not self.plain(dw) or len(dw.outputs) != 1
                    or len(dw.inputs) < 2 or min(dw.inputs[:2]) < 0 or len(dw.inputs) > 3
                    or not self.is_float(dw.inputs[0], dw.outputs[0]) or len(self.t(dw.outputs[0]).shape) != 4):
                continue
            out = dw.outputs[0]
            c = self.only_reader(out)
            if (c is None or not self.plain(c)
                    or not self._foldable_1x1(c, out, self.t(out).shape[-1])
                    or (getattr(c.options, "stride_h", 1) or 1) != 1 or (getattr(c.options, "stride_w", 1) or 1) != 1
                    or not self.rules.pointwise(self.g, dw, c)):
                continue
            bias = c.inputs[2] if len(c.inputs) > 2 and c.inputs[2] >= 0 else -1
            own = (*dw.inputs, -1) if len(dw.inputs) == 2 else dw.inputs  # keep slot 2 the depthwise's bias
            dw.inputs = (*own, c.inputs[1], *((bias,) if bias >= 0 else ()))
            dw.pointwise = Pointwise(len(own), len(own) + 1 if bias >= 0 else -1, c.activation)
            dw.outputs = c.outputs
            self.dropped.add(id(c))
        self.reindex()

    def input_scales(self) -> None:
        for m in self.g.nodes:
            if (m.op != Op.MUL or len(m.inputs) != 2 or min(m.inputs) < 0 or len(m.outputs) != 1 or m.activation
                    or not self.plain(m) or not self.is_float(*m.inputs, m.outputs[0])):
                continue
            out = m.outputs[0]
            shape = self.t(out).shape
            c = self.only_reader(out)
            if (c is None or c.op != Op.CONV_2D or c.input_scale is not None or c.pads is not None or not c.inputs
                    or c.inputs[0] != out or out in c.inputs[1:] or len(shape) != 4):
                continue
            x, s = m.inputs if self.t(m.inputs[0]).shape == shape else m.inputs[::-1]
            if (self.t(x).shape != shape or x == s or len(self.t(s).shape) > len(shape)
                    or tuple(self.t(s).shape[-1:]) != shape[-1:] or not _per_channel(self.t(s).shape, shape)
                    or not self.rules.input_scale(self.g, m, c)):
                continue
            own = c.inputs if len(c.inputs) >= 3 else (*c.inputs, -1)  # keep slot 2 the bias
            c.inputs = (x, *own[1:], s)
            c.input_scale = len(c.inputs) - 1
            self.dropped.add(id(m))
        self.reindex()

    def views(self) -> None:
        for n in self.g.nodes:
            if n.op == Op.CONCATENATION:
                self._concat_views(n)
                continue
            if n.op not in VIEW_OPS or not n.inputs or n.inputs[0] < 0 or len(n.outputs) != 1:
                continue
            src, out = self.t(n.inputs[0]), self.t(n.outputs[0])
            if (not self._placeable(src.index) or out.bounded or out.is_variable or src.dtype != out.dtype
                    or src.nbytes != out.nbytes or out.index in self.g.views or not self.rules.view(self.g, n)):
                continue
            self.g.views[out.index] = (src.index, 0)

    def _placeable(self, i: int) -> bool:
        """Whether tensor ``i``'s bytes may be placed inside another's: made by a node, not a
        graph input, variable, constant or data-dependent slot."""
        t = self.t(i)
        return not (t.is_const or t.is_variable or t.bounded or i in self.g.inputs)

    def _concat_views(self, n: Node) -> None:
        if len(n.outputs) != 1 or not n.inputs or min(n.inputs) < 0 or len(set(n.inputs)) != len(n.inputs):
            return
        out = self.t(n.outputs[0])
        rank = len(out.shape)
        axis = getattr(n.options, "axis", 0)
        axis = axis + rank if axis < 0 else axis
        ins = [self.t(i) for i in n.inputs]
        fused_code = getattr(n.options, "fused_activation_function", 0)
        if (n.activation or fused_code or not 0 <= axis < rank
                or any(d != 1 for d in out.shape[:axis]) or out.bounded
                or out.quant is not None or any(len(x.shape) != rank or x.dtype != out.dtype or x.quant for x in ins)
                or sum(x.nbytes for x in ins) != out.nbytes):
            return
        tops, off = [], 0
        for x in ins:  # place the top of each input's RESHAPE chain (the tensor a node writes)
            top = x.index
            while top in self.g.views and self.g.views[top][1] == 0:
                top = self.g.views[top][0]
            if top in self.g.views or not self._placeable(top) or off % 16 or top in tops:
                return
            tops.append(top)
            off += x.nbytes
        if not self.rules.view(self.g, n):
            return
        off = 0
        for top, x in zip(tops, ins, strict=True):
            self.g.views[top] = (out.index, off)
            off += x.nbytes

    def epilogues(self) -> None:
        for n in list(self.g.nodes):  # a snapshot: hoist and sink reorder the list
            if id(n) in self.dropped or len(n.outputs) != 1 or not n.inputs or n.prelu_alpha is not None:
                continue
            if not self.is_float(n.inputs[0], n.outputs[0]):
                continue
            steps = list(n.epilogue)
            while True:
                step = self._next_step(n)
                if step is None:
                    break
                c, entries, extra = step
                n.inputs = (*n.inputs, *extra)
                steps.extend(entries)
                n.outputs = (c.outputs[0],)
                self.dropped.add(id(c))
                # keep the maps current for the next link of the chain
                self.producer[c.outputs[0]] = n
            n.epilogue = tuple(steps)
        self.reindex()

    def _next_step(self, n: Node) -> tuple[Node, list[EpilogueStep], list[int]] | None:
        """(consumer, epilogue steps, tensors to append to the inputs) for the op after ``n``, or None."""
        out = n.outputs[0]
        c = self.only_reader(out)
        if (c is None or id(c) in self.dropped or len(c.outputs) != 1 or not self.is_float(c.outputs[0])
                or c.epilogue or (c.prelu_alpha is not None and c.op != Op.ADD)):
            return None
        shape = self.t(out).shape
        if not shape or self.t(c.outputs[0]).shape != shape:
            return None  # a scalar has no channels
        slot = len(n.inputs)
        if c.op == Op.ADD and len(c.inputs) == 2 and list(c.inputs).count(out) == 1:
            other = c.inputs[1] if c.inputs[0] == out else c.inputs[0]
            alpha = None if c.prelu_alpha is None else self.t(c.prelu_alpha).const
            if not self.is_float(other) or (alpha is not None and not _per_channel(alpha.shape, shape)):
                return None
            src = self._channel_pad_source(other, shape)
            if src is not None:  # a channel PAD of the residual: add the unpadded tensor instead
                residual, channels = src, self.t(src).shape[-1]
            elif self.t(other).shape == shape:
                residual, channels = other, shape[-1]
            else:
                return None
            if not self.rules.epilogue(self.g, n, c):
                return None
            if src is not None:
                self.dropped.add(id(self.producer[other]))
            if not self.hoist(residual, n):
                self.sink(n, c)
            steps: list[EpilogueStep] = [ResidualAdd(slot, channels)]
            if c.activation.clamp is not None:
                steps.append(Activation(c.activation))
            if c.prelu_alpha is not None:  # a PRELU the prelu rewrite had fused into the ADD
                steps.append(PRelu(slot + 1))
                return c, steps, [residual, c.prelu_alpha]
            return c, steps, [residual]
        if c.op == Op.PRELU and len(c.inputs) == 2 and c.inputs[0] == out and c.inputs[1] >= 0:
            alpha = self.t(c.inputs[1]).const
            if (alpha is None or alpha.dtype != _F32 or not _per_channel(alpha.shape, shape)
                    or not self.rules.epilogue(self.g, n, c)):
                return None
            return c, [PRelu(slot)], [c.inputs[1]]
        clamp = FusedActivation.of_op(c.op)
        if (clamp or c.op in (Op.HARD_SWISH, Op.LOGISTIC)) and len(c.inputs) == 1:
            if not self.rules.epilogue(self.g, n, c):
                return None
            step = Activation(clamp) if clamp else HardSwish() if c.op == Op.HARD_SWISH else Logistic()
            return c, [step], []
        return None

    def _channel_pad_source(self, padded: int, shape: tuple[int, ...]) -> int | None:
        """The input of a zero PAD adding channels at the end only, read by nothing else."""
        p = self.producer.get(padded)
        if p is None or p.op != Op.PAD or len(p.inputs) != 2 or min(p.inputs) < 0 or self.only_reader(padded) is None:
            return None
        src = p.inputs[0]
        pads = self.t(p.inputs[1]).const
        if pads is None or not self.is_float(src) or np.shape(pads) != (len(shape), 2):
            return None
        pads = np.asarray(pads).astype(np.int64)
        if pads[:-1].any() or pads[-1, 0] != 0 or pads[-1, 1] < 0:
            return None
        if self.t(src).shape[:-1] != shape[:-1] or self.t(src).shape[-1] + pads[-1, 1] != shape[-1]:
            return None
        return src


def _per_channel(alpha_shape: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``alpha`` broadcast against ``shape`` varies along the last axis only."""
    if len(alpha_shape) > len(shape) or not alpha_shape:
        return len(alpha_shape) == 0
    if alpha_shape[-1] not in (1, shape[-1]):
        return False
    return all(d == 1 for d in alpha_shape[:-1])
