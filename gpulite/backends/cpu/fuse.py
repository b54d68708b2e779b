"""CPU-only graph rewrites, made by :meth:`CpuBackend.compile` on copies of the nodes.

The graph the interpreter (and any other backend) holds is never modified: nodes are
copied (``attrs`` too) and new constants go into a copied tensor list, appended after the
model's tensors. Only float32, unquantized tensors are rewritten; each rewrite gives the
same numbers up to float rounding.

- **PAD folding**: a zero PAD/PADV2 of H and W only, whose output feeds only float
  CONV_2D or DEPTHWISE_CONV_2D ops (as their input), disappears; each conv reads the
  unpadded tensor with the pads in ``attrs["cpu_pads"]`` = (top, bottom, left, right),
  added to its own padding.
  The conv kernels copy their input into a padded buffer anyway, so the PAD's copy is saved.
- **Depthwise bias folding**: a DEPTHWISE_CONV_2D without activation whose output feeds
  only 1x1 CONV_2Ds (which never pad) has its bias moved into theirs:
  ``conv(dw + b) = conv(dw) + W @ b``. A whole pass over the depthwise output is saved.
- **Epilogues**: elementwise ops after a float CONV_2D or DEPTHWISE_CONV_2D, each the sole
  reader of the previous result, move into the conv as ``attrs["cpu_epilogue"]``, a list
  of steps the conv applies chunk by chunk while its output is in cache:
  ``("add", slot, channels)`` adds the conv's input ``slot`` (a residual of the output's
  shape, or, when a channel-only PAD fed the ADD, the unpadded tensor into the first
  ``channels`` channels), ``("act", name)`` the ADD's fused activation, ``("prelu", slot)``,
  ``("hard_swish",)`` and ``("logistic",)``. Extra inputs are appended to the conv's inputs
  so the memory plan keeps them alive; they must be computed before the conv runs, so their
  producers are moved ahead of it when they do not depend on it (a residual's MAX_POOL), or
  else the conv is moved down to where the ADD was.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.model.opdefs import FusedActivation, Op

_F32 = np.dtype(np.float32)
CONVS = (Op.CONV_2D, Op.DEPTHWISE_CONV_2D)


class _Rewriter:
    def __init__(self, graph: Graph, order: list[Node]) -> None:
        nodes = [dataclasses.replace(n, attrs=dict(n.attrs)) for n in order]
        self.g = Graph(list(graph.tensors), nodes, graph.inputs, graph.outputs, graph.name)
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
    def fold_pads(self) -> None:
        for p in self.g.nodes:
            if p.op not in (Op.PAD, Op.PADV2) or len(p.inputs) < 2 or min(p.inputs[:2]) < 0 or len(p.outputs) != 1:
                continue
            out = p.outputs[0]
            readers = self.consumers.get(out, [])
            if not readers or out in self.g.outputs or not self.is_float(p.inputs[0], out):
                continue
            if not all(n.op in CONVS and "cpu_pads" not in n.attrs and n.inputs and n.inputs[0] == out
                       and out not in n.inputs[1:] and self.is_float(n.outputs[0]) for n in readers):
                continue
            pads = self.t(p.inputs[1]).const
            if pads is None or np.shape(pads) != (4, 2) or len(self.t(p.inputs[0]).shape) != 4:
                continue
            pads = np.asarray(pads).astype(np.int64)
            if (pads < 0).any() or pads[0].any() or pads[3].any():
                continue
            if p.op == Op.PADV2 and len(p.inputs) > 2 and p.inputs[2] >= 0:
                v = self.t(p.inputs[2]).const
                if v is None or np.size(v) != 1 or float(np.asarray(v).reshape(())) != 0.0:
                    continue
            for n in readers:
                n.inputs = (p.inputs[0], *n.inputs[1:])
                n.attrs["cpu_pads"] = (int(pads[1, 0]), int(pads[1, 1]), int(pads[2, 0]), int(pads[2, 1]))
            self.dropped.add(id(p))
        self.reindex()

    def fold_depthwise_bias(self) -> None:
        for dw in self.g.nodes:
            if (dw.op != Op.DEPTHWISE_CONV_2D or dw.activation or len(dw.inputs) < 3
                    or len(dw.outputs) != 1 or min(dw.inputs[:3]) < 0
                    or not self.is_float(dw.inputs[0], dw.outputs[0])):
                continue
            b = self.t(dw.inputs[2]).const
            out = dw.outputs[0]
            cons = self.consumers.get(out, [])
            if b is None or b.dtype != _F32 or out in self.g.outputs or not cons:
                continue
            c_out = self.t(out).shape[-1]
            if b.size != c_out or not all(self._foldable_1x1(c, out, c_out) for c in cons):
                continue
            b64 = b.reshape(-1).astype(np.float64)
            for c in cons:
                w = self.t(c.inputs[1]).const
                o = w.shape[0]
                nb = w.reshape(o, c_out).astype(np.float64) @ b64
                if len(c.inputs) > 2 and c.inputs[2] >= 0:
                    nb += self.t(c.inputs[2]).const.reshape(o).astype(np.float64)
                idx = self.add_const(nb.astype(np.float32), f"cpu_folded_bias_{c.index}")
                c.inputs = (c.inputs[0], c.inputs[1], idx, *tuple(c.inputs[3:]))
            dw.inputs = (dw.inputs[0], dw.inputs[1], -1, *tuple(dw.inputs[3:]))
        self.reindex()

    def _foldable_1x1(self, c: Node, tensor: int, channels: int) -> bool:
        if (c.op != Op.CONV_2D or len(c.inputs) < 2 or len(c.outputs) != 1 or c.inputs[0] != tensor
                or c.inputs[1] < 0 or tensor in c.inputs[1:]):
            return False
        if not self.is_float(c.inputs[0], c.outputs[0]) or "cpu_pads" in c.attrs:
            return False
        w = self.t(c.inputs[1]).const
        if w is None or w.dtype != _F32 or w.ndim != 4 or w.shape[1:] != (1, 1, channels):
            return False
        if getattr(c.options, "dilation_h_factor", 1) < 1 or getattr(c.options, "dilation_w_factor", 1) < 1:
            return False
        return len(c.inputs) < 3 or c.inputs[2] < 0 or (
            self.t(c.inputs[2]).const is not None and self.t(c.inputs[2]).const.size == w.shape[0])

    def fuse_epilogues(self) -> None:
        for n in list(self.g.nodes):  # a snapshot: hoist and sink reorder the list
            if id(n) in self.dropped or n.op not in CONVS or len(n.outputs) != 1 or not n.inputs:
                continue
            if not self.is_float(n.inputs[0], n.outputs[0]):
                continue
            steps = list(n.attrs.get("cpu_epilogue", ()))
            while True:
                step = self._next_step(n)
                if step is None:
                    break
                c, entries, extra = step
                for tensor in extra:
                    n.inputs = (*tuple(n.inputs), tensor)
                steps.extend(entries)
                n.outputs = (c.outputs[0],)
                self.dropped.add(id(c))
                # keep the maps current for the next link of the chain
                self.producer[c.outputs[0]] = n
            if steps:
                n.attrs["cpu_epilogue"] = steps
        self.reindex()

    def _next_step(self, n: Node):
        """(consumer, epilogue entries, tensors to append) for the op after ``n``, or None."""
        out = n.outputs[0]
        c = self.only_reader(out)
        if c is None or id(c) in self.dropped or len(c.outputs) != 1 or not self.is_float(c.outputs[0]):
            return None
        shape = self.t(out).shape
        if self.t(c.outputs[0]).shape != shape:
            return None
        slot = len(n.inputs)
        if c.op == Op.ADD and len(c.inputs) == 2 and list(c.inputs).count(out) == 1:
            other = c.inputs[1] if c.inputs[0] == out else c.inputs[0]
            if not self.is_float(other):
                return None
            src = self._channel_pad_source(other, shape)
            if src is not None:  # a channel PAD of the residual: add the unpadded tensor instead
                self.dropped.add(id(self.producer[other]))
                other, channels = src, self.t(src).shape[-1]
            elif self.t(other).shape == shape:
                channels = shape[-1]
            else:
                return None
            if not self.hoist(other, n):
                self.sink(n, c)
            entries = [("add", slot, channels)]
            extra = [other]
            if c.activation.clamp is not None:
                entries.append(("act", c.activation))
            return c, entries, extra
        if c.op == Op.PRELU and len(c.inputs) == 2 and c.inputs[0] == out and c.inputs[1] >= 0:
            alpha = self.t(c.inputs[1]).const
            if alpha is None or alpha.dtype != _F32 or not _per_channel(alpha.shape, shape):
                return None
            return c, [("prelu", slot)], [c.inputs[1]]
        clamp = FusedActivation.of_op(c.op)
        if (clamp or c.op in (Op.HARD_SWISH, Op.LOGISTIC)) and len(c.inputs) == 1:
            return c, [("act", clamp) if clamp else (c.op.lower(),)], []
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


def rewrite(graph: Graph, order: list[Node]) -> tuple[Graph, list[Node]]:
    """The CPU-rewritten copy of ``graph`` and its execution order (see the module docstring)."""
    r = _Rewriter(graph, order)
    r.fold_pads()
    r.fold_depthwise_bias()
    r.fuse_epilogues()
    return r.g, list(r.g.nodes)
