"""The CPU backend: one numpy arena, one closure per node, nothing allocated per invoke.

``compile`` lays every planned tensor out as a view into a single ``uint8`` arena (the
offsets come from :func:`gpulite.graph.plan.plan_memory`), asks each node's kernel factory
for its ``run`` closure once, and ``invoke`` just calls the closures in order.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import get_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.plan import MemoryPlan


class CpuContext:
    """What a CPU kernel factory sees: its node's tensors as arrays plus their metadata.

    ``input(i)`` is the array of the node's i-th input (an arena view, or the constant's
    value), ``output(i)`` the preallocated array to write into. ``in_info(i)`` and
    ``out_info(i)`` give shape, dtype and quantization. Kernels must write outputs in
    place (``out=`` or ``out[...] =``) and never rebind them.
    """

    def __init__(self, graph: Graph, node: Node, arrays: dict[int, np.ndarray], num_threads: int) -> None:
        self.graph, self.node, self._arrays, self.num_threads = graph, node, arrays, num_threads

    @property
    def num_inputs(self) -> int:
        return len(self.node.inputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] >= 0

    def in_info(self, i: int) -> TensorInfo:
        return self.graph.tensors[self.node.inputs[i]]

    def out_info(self, i: int) -> TensorInfo:
        return self.graph.tensors[self.node.outputs[i]]

    def input(self, i: int) -> np.ndarray:
        return self._arrays[self.node.inputs[i]]

    def const(self, i: int) -> np.ndarray | None:
        """The constant value of input i, or None when it is computed at run time."""
        return self.in_info(i).const if self.has_input(i) else None

    def output(self, i: int) -> np.ndarray:
        return self._arrays[self.node.outputs[i]]


class CpuExecutable:
    def __init__(self, arena: np.ndarray, arrays: dict[int, np.ndarray], steps: list) -> None:
        self.arena, self.arrays, self.steps = arena, arrays, steps

    def invoke(self) -> None:
        for run in self.steps:
            run()


class CpuBackend:
    name = "cpu"

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = num_threads or 1

    def check_support(self, graph: Graph, order: list[Node]) -> None:
        for n in order:
            if get_kernel(n.op, self.name) is None:
                raise UnsupportedOpError(n.op, n.index, self.name)

    def compile(self, graph: Graph, order: list[Node], plan: MemoryPlan) -> CpuExecutable:
        self.check_support(graph, order)
        arena = np.zeros(max(plan.arena_bytes, 1), np.uint8)
        arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            if t.const is not None:
                arrays[t.index] = t.const
            elif t.index in plan.offsets:
                off = plan.offsets[t.index]
                arrays[t.index] = arena[off : off + t.nbytes].view(t.dtype).reshape(t.shape)
        steps = []
        for n in order:
            factory = get_kernel(n.op, self.name)
            run = factory(n, CpuContext(graph, n, arrays, self.num_threads))
            steps.append(run)
        return CpuExecutable(arena, arrays, steps)
