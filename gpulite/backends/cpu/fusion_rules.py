"""What the CPU backend's kernels run fused (:mod:`gpulite.graph.fusion` makes the rewrites,
on float32 tensors only).

- a RELU-family node into its producer: every kernel applies ``node.activation``;
- a zero PAD into a float CONV_2D / DEPTHWISE_CONV_2D: their window reads the unpadded input with
  ``node.pads`` added to the padding (:func:`.window.window`), copying it into the padded
  buffer the kernels fill anyway, so the PAD's copy is saved;
- a depthwise bias into the following 1x1 convs: a whole pass over the depthwise output saved;
- elementwise nodes as the epilogue of CONV_2D / DEPTHWISE_CONV_2D (:mod:`.epilogue`), run
  chunk by chunk while the conv's output is in cache.

Not ``prelu_alpha``: a PRELU after a conv runs as an epilogue step instead.

:meth:`CpuBackend.prepare` fuses with :data:`CPU_RULES` (the interpreter prepares again from
the model's graph after an input resize, so every fusion is made on final shapes).
"""

from __future__ import annotations

import numpy as np

from gpulite.graph.fusion import CONVS, FusionRules
from gpulite.graph.ir import Graph, Node


class CpuFusionRules(FusionRules):
    """The CPU backend's answers (see the module docstring)."""

    def activation(self, g: Graph, producer: Node, act: Node) -> bool:
        return True

    def pad(self, g: Graph, pad: Node, conv: Node) -> bool:
        # not into a hybrid conv (int8 filter): LiteRT quantizes the padded tensor, per pixel
        # for a pointwise conv, which the unpadded window cannot reproduce
        return g.tensors[conv.inputs[1]].dtype == np.float32

    def depthwise_bias(self, g: Graph, dw: Node, conv: Node) -> bool:
        return True

    def epilogue(self, g: Graph, producer: Node, node: Node) -> bool:
        return producer.op in CONVS


CPU_RULES = CpuFusionRules()
