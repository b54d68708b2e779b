"""The WebGPU backend: kernels as compute dispatches over one arena buffer.

``compile`` asks each node's WebGPU kernel factory for its :class:`Program` list, falling
back to the CPU backend's kernel for a node without one (or whose kernel declines it),
groups the nodes into GPU and CPU partitions (:mod:`.partition`) and hands everything to
:class:`~.executable.WebGpuExecutable`, which builds the GPU objects once.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import get_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph, Node
from gpulite.graph.plan import MemoryPlan

from . import partition as pt
from .arena import GpuArena
from .context import GpuContext
from .device import GpuDevice, get_device
from .executable import WebGpuExecutable
from .program import Program

log = logging.getLogger(__name__)


class WebGpuBackend:
    """Compile plans to WebGPU.

    Parameters
    ----------
    num_threads : int, optional
        Threads for nodes that fall back to the CPU backend.
    device : GpuDevice or str, optional
        A device, or an adapter-name substring (as ``GPULITE_ADAPTER``); default: the shared
        high-performance device.
    precision : {"fp32"}
        Storage and arithmetic precision. ``"fp16"`` (shader-f16) is not implemented yet.
    cpu_ops : iterable of str
        Ops forced onto the CPU backend even when a WebGPU kernel exists (debugging, tests).
    """

    name = "webgpu"

    def __init__(self, num_threads: int | None = None, device: GpuDevice | str | None = None,
                 precision: str = "fp32", cpu_ops: Any = ()) -> None:
        if precision not in ("fp32", "fp16"):
            raise ValueError(f"precision must be 'fp32' or 'fp16', got {precision!r}")
        self.gdev = device if isinstance(device, GpuDevice) else get_device(device)
        if precision == "fp16":
            raise NotImplementedError(
                f"precision='fp16' is not implemented yet ({self.gdev.name} "
                f"{'supports' if self.gdev.has_f16 else 'lacks'} shader-f16); use 'fp32'")
        self.num_threads = num_threads or 1
        self.precision = precision
        self.cpu_ops = frozenset(cpu_ops)

    def _gpu_work(self, n: Node, graph: Graph, plan: MemoryPlan, garena: GpuArena) -> tuple[list[Program] | None, str]:
        if n.op in self.cpu_ops:
            return None, "forced onto the cpu (cpu_ops)"
        factory = get_kernel(n.op, self.name)
        if factory is None:
            return None, "no webgpu kernel"
        mark = garena.checkpoint()
        try:
            out = factory(n, GpuContext(graph, n, plan, garena, self.gdev))
        except UnsupportedOpError as e:
            garena.rollback(mark)
            return None, str(e)
        programs = [out] if isinstance(out, Program) else list(out)
        return [p for p in programs if p.threads > 0], ""

    def compile(self, graph: Graph, order: list[Node], plan: MemoryPlan) -> WebGpuExecutable:
        host = np.zeros(max(plan.arena_bytes, 64), np.uint8)
        arrays: dict[int, np.ndarray] = {}
        cpu_arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            if t.const is not None:
                cpu_arrays[t.index] = t.const
            elif t.index in plan.offsets:
                off = plan.offsets[t.index]
                arrays[t.index] = cpu_arrays[t.index] = host[off:off + t.nbytes].view(t.dtype).reshape(t.shape)
        garena = GpuArena(plan.arena_bytes)
        steps: list[tuple[Node, str, Any]] = []
        for n in order:
            programs, why = self._gpu_work(n, graph, plan, garena)
            if programs is not None:
                steps.append((n, pt.GPU, programs))
                continue
            cpu_factory = get_kernel(n.op, "cpu")
            if cpu_factory is None:
                raise UnsupportedOpError(n.op, n.index, self.name, f"{why}; the cpu backend has no kernel either")
            log.info("node %d (%s) runs on the cpu: %s", n.index, n.op, why)
            steps.append((n, pt.CPU, cpu_factory(n, CpuContext(graph, n, cpu_arrays, self.num_threads))))
        parts = pt.partition(graph, plan.offsets, steps)
        return WebGpuExecutable(self.gdev, graph, plan, host, arrays, garena, parts)
