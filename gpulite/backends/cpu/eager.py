"""Eager ops on the numpy backend: a one-node graph compiled once, run on numpy arrays.

:mod:`gpulite.ops` builds a one-node :class:`~gpulite.graph.ir.Graph` per (op, shapes,
dtypes, options) and compiles it here once: the kernel factory is called with a
:class:`~.context.CpuContext` over arrays the compiled op owns (the inputs' slots and the
outputs), exactly as ``allocate_tensors`` does for a model. Running copies the inputs into
their slots, calls the kernel and hands out copies of the outputs (the slots are reused by
the next call); a bounded output (WHERE's) comes out in the shape its kernel recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpulite.backends.base import DeviceKind
from gpulite.backends.kernels import get_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph

from .context import CpuContext, ScratchPool


@dataclass
class CpuCompiled:
    """One op compiled for eager use: its input slots, outputs (``output_ids``: their tensors) and the
    kernel's ``run``; ``extents``: the shapes its kernel recorded for bounded outputs, by tensor."""

    name: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    run: Callable[[], None]
    output_ids: tuple[int, ...] = ()
    extents: dict[int, tuple[int, ...]] = field(default_factory=dict)


class CpuEager:
    """Eager-op executor on the numpy backend.

    Parameters
    ----------
    name : str
        The registered backend name; kernels are looked up under it.
    num_threads : int, optional
        Passed to kernel factories as ``ctx.num_threads``.
    """

    device_kind: DeviceKind = "cpu"

    def __init__(self, name: str = "cpu", *, num_threads: int | None = None) -> None:
        self.name, self.num_threads = name, num_threads or 1
        self.closed = False
        # Ops run one at a time, so every compiled op can share one scratch pool (im2col
        # patches and the like) instead of holding its own.
        self._scratch = ScratchPool()

    def compile(self, graph: Graph) -> CpuCompiled:
        """Compile the one-node ``graph``.

        Raises
        ------
        UnsupportedOpError
            When this backend has no kernel for the op, or the kernel rejects the node.
        """
        node = graph.nodes[0]
        factory = get_kernel(node.op, self.name)
        if factory is None:
            raise UnsupportedOpError(node.op, node.index, self.name)
        arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            arrays[t.index] = t.const if t.const is not None else np.zeros(t.shape, t.dtype)
        extents: dict[int, tuple[int, ...]] = {}
        run = factory(node, CpuContext(graph, node, arrays, self.num_threads, self._scratch, extents))
        return CpuCompiled(node.op, [arrays[i] for i in graph.inputs], [arrays[o] for o in graph.outputs], run,
                           tuple(graph.outputs), extents)

    def run(self, compiled: CpuCompiled, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run ``compiled`` on ``arrays`` (one per runtime input); returns new output arrays."""
        for slot, x in zip(compiled.inputs, arrays, strict=True):
            np.copyto(slot, x)
        compiled.run()
        if compiled.extents:
            return [_leading(o, compiled.extents[t]) if t in compiled.extents else o.copy()
                    for o, t in zip(compiled.outputs, compiled.output_ids, strict=True)]
        return [o.copy() for o in compiled.outputs]

    def discard(self, compiled: CpuCompiled) -> None:
        """Nothing to release: the arrays go with the object."""

    def allocated_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def flush(self) -> None:
        """Nothing is deferred on the CPU."""

    def wait(self) -> None:
        """Nothing runs asynchronously on the CPU."""

    def close(self) -> None:
        self.closed = True


def _leading(slot: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A copy of the first elements of a bounded output's ``slot``, in ``shape``."""
    return slot.reshape(-1)[:int(np.prod(shape, dtype=np.int64))].reshape(shape).copy()
