"""What the WebGPU backend's kernels run fused (:mod:`gpulite.graph.fusion` makes the rewrites).

- a RELU-family node into its producer: every kernel (and the CPU kernel a node falls back
  to) applies ``node.activation``;
- a PRELU into a CONV_2D, DEPTHWISE_CONV_2D or ADD as ``prelu_alpha``, where that op's
  factory runs the pair (its kernel module's check: :func:`.kernels.conv.prelu_fusable`,
  :func:`.kernels.elementwise.add_prelu_fusable`) and the op is not forced onto the CPU
  (whose kernels know nothing of ``prelu_alpha``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpulite.graph.fusion import FusionRules
from gpulite.graph.ir import Graph, Node
from gpulite.model.opdefs import Op

from .kernels.conv import prelu_fusable
from .kernels.elementwise import add_prelu_fusable

# Producer op -> whether its factory runs (graph, producer, prelu) with the PReLU fused.
PRELU_FUSABLE: dict[str, Callable[[Graph, Node, Node], bool]] = {
    Op.CONV_2D: prelu_fusable, Op.DEPTHWISE_CONV_2D: prelu_fusable, Op.ADD: add_prelu_fusable,
}


class WebGpuFusionRules(FusionRules):
    """The WebGPU backend's answers (see the module docstring) for a backend whose ``cpu_ops``
    are forced onto the CPU."""

    def __init__(self, cpu_ops: Iterable[str] = ()) -> None:
        self.cpu_ops = frozenset(cpu_ops)

    def activation(self, g: Graph, producer: Node, act: Node) -> bool:
        return True

    def prelu(self, g: Graph, producer: Node, prelu: Node) -> bool:
        accept = PRELU_FUSABLE.get(producer.op)
        return producer.op not in self.cpu_ops and accept is not None and accept(g, producer, prelu)
