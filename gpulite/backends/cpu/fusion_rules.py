"""What the CPU backend's kernels run fused (:mod:`gpulite.graph.fusion` makes the rewrites,
on float32 tensors only).

- a RELU-family node into its producer: every kernel applies ``node.activation``;
- a zero PAD into CONV_2D / DEPTHWISE_CONV_2D: their window reads the unpadded input with
  ``node.pads`` added to the padding (:func:`.window.window`), copying it into the padded
  buffer the kernels fill anyway, so the PAD's copy is saved;
- a depthwise bias into the following 1x1 convs: a whole pass over the depthwise output saved;
- elementwise nodes as the epilogue of CONV_2D / DEPTHWISE_CONV_2D (:mod:`.epilogue`), run
  chunk by chunk while the conv's output is in cache.

Not ``prelu_alpha``: a PRELU after a conv runs as an epilogue step instead.

:data:`CPU_LOAD_RULES` allow only what does not depend on shapes (the activations), for the
graph the interpreter keeps and plans at load; :data:`CPU_RULES` allow everything, for the
copy :meth:`CpuBackend.compile` fuses once shapes are final (after any input resize: the
shape rules know nothing of ``pads`` or epilogues, and a resize may make a fusion wrong).
"""

from __future__ import annotations

from gpulite.graph.fusion import CONVS, FusionRules
from gpulite.graph.ir import Graph, Node


class CpuFusionRules(FusionRules):
    """The CPU backend's answers (see the module docstring); ``at_load``: the activations only."""

    def __init__(self, at_load: bool = False) -> None:
        self.at_load = at_load

    def activation(self, g: Graph, producer: Node, act: Node) -> bool:
        return True

    def pad(self, g: Graph, pad: Node, conv: Node) -> bool:
        return not self.at_load

    def depthwise_bias(self, g: Graph, dw: Node, conv: Node) -> bool:
        return not self.at_load

    def epilogue(self, g: Graph, producer: Node, node: Node) -> bool:
        return not self.at_load and producer.op in CONVS


CPU_LOAD_RULES = CpuFusionRules(at_load=True)
CPU_RULES = CpuFusionRules()
