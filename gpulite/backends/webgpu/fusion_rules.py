"""What the WebGPU backend's kernels run fused (:mod:`gpulite.graph.fusion` makes the rewrites):
the TFLite GPU delegate's graph rewrites, each allowed where the receiving kernel runs it
(its kernel module's check) and the receiving op is not forced onto the CPU (``cpu_ops``):

- a RELU-family node into its producer: every kernel (and the CPU kernel a node falls back
  to) applies ``node.activation``;
- a PRELU into a CONV_2D, DEPTHWISE_CONV_2D or ADD as ``prelu_alpha``
  (:func:`.kernels.conv.prelu_fusable`, :func:`.kernels.elementwise.add_prelu_fusable`);
- a zero PAD of H and W into the CONV_2D / DEPTHWISE_CONV_2D reading it (``node.pads``: the
  window's padding grows, :func:`.kernels.conv.fusable`);
- a thin DEPTHWISE_CONV_2D and the 1x1 CONV_2D after it into one kernel
  (``node.pointwise``, :func:`.kernels.pointwise.fusable`: the delegate's limits);
- elementwise nodes (residual ADD, clamps, PRELU, HARD_SWISH, LOGISTIC) into the epilogue of
  a convolution, a transposed convolution, a FULLY_CONNECTED with constant weights or an
  elementwise binary op, which store every value through ``finish`` (:mod:`.kernels.epilogue`);
- a MUL by a per-channel factor into the 1x1 CONV_2D reading it (``node.input_scale``: the
  conv's A loads multiply by it, :func:`.kernels.conv.input_scale_fusable`);
- RESHAPE, SQUEEZE and EXPAND_DIMS as views (``graph.views``): the memory plan gives the
  output its input's bytes and the kernel dispatches nothing.

A node carrying fused work its CPU kernel does not run never falls back to the CPU
(:func:`.kernels.epilogue.keep_fused` raises instead).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpulite.graph.fusion import CONVS, FusionRules
from gpulite.graph.ir import Graph, Node
from gpulite.model.opdefs import Op

from .kernels import pointwise
from .kernels.conv import fusable as conv_fusable
from .kernels.conv import input_scale_fusable, prelu_fusable
from .kernels.elementwise import BINARY, add_prelu_fusable, binary_fusable
from .kernels.fully_connected import fusable as fc_fusable
from .kernels.transpose_conv import fusable as transpose_fusable

# Producer op -> whether its factory runs (graph, producer, prelu) with the PReLU fused.
PRELU_FUSABLE: dict[str, Callable[[Graph, Node, Node], bool]] = {
    Op.CONV_2D: prelu_fusable, Op.DEPTHWISE_CONV_2D: prelu_fusable, Op.ADD: add_prelu_fusable,
}


def _runs_epilogue(g: Graph, n: Node) -> bool:
    """Whether ``n``'s WebGPU kernel stores through ``finish`` (so runs any epilogue)."""
    if n.op in CONVS:
        return n.pointwise is not None or conv_fusable(g, n)  # a merged node passed pointwise.fusable
    if n.op in (Op.TRANSPOSE_CONV, Op.Convolution2DTransposeBias):
        return transpose_fusable(g, n)
    if n.op == Op.FULLY_CONNECTED:
        return fc_fusable(g, n)
    return n.op in BINARY and binary_fusable(g, n)


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

    def pad(self, g: Graph, pad: Node, conv: Node) -> bool:
        return conv.op not in self.cpu_ops and conv_fusable(g, conv)

    def pointwise(self, g: Graph, dw: Node, conv: Node) -> bool:
        return not {dw.op, conv.op} & self.cpu_ops and conv_fusable(g, dw) and pointwise.fusable(g, dw, conv)

    def epilogue(self, g: Graph, producer: Node, node: Node) -> bool:
        return not {producer.op, node.op} & self.cpu_ops and _runs_epilogue(g, producer)

    def input_scale(self, g: Graph, mul: Node, conv: Node) -> bool:
        return not {mul.op, conv.op} & self.cpu_ops and input_scale_fusable(g, conv)

    def view(self, g: Graph, node: Node) -> bool:
        return node.op not in self.cpu_ops
