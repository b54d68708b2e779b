"""The WebGPU backend: kernels as compute dispatches over one arena buffer.

``compile`` asks each node's WebGPU kernel factory for its :class:`Program` list (falling back
to the CPU backend's kernel for nodes without one), packs every program's uniform block into
one buffer, and builds pipelines and bind groups, all once. ``invoke`` records one command
encoder per GPU partition (one in total for a fully supported model) and submits it; the
only synchronisation is the mapped readback of outputs and crossings.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import wgpu

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import get_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph, Node
from gpulite.graph.plan import MemoryPlan

from . import partition as pt
from .arena import GpuArena
from .context import GpuContext
from .device import GpuDevice, get_device
from .program import KernelError, Program, get_pipeline

log = logging.getLogger(__name__)


class WebGpuExecutable:
    """A compiled plan on one device; owns its arena, uniform and staging buffers.

    ``arena``/``arrays`` are the host mirror (inputs as written, outputs after ``invoke``);
    ``tensor()`` views of GPU intermediates are not kept current.
    """

    def __init__(self, gdev: GpuDevice, graph: Graph, plan: MemoryPlan, host: np.ndarray,
                 arrays: dict[int, np.ndarray], garena: GpuArena, parts: list[pt.Partition]) -> None:
        self.gdev, self.graph, self.plan, self.parts = gdev, graph, plan, parts
        self.arena, self.arrays, self.garena = host, arrays, garena
        self.bytes_uploaded = 0
        self.bytes_read_back = 0
        self.invokes = 0
        self._buffers: list[Any] = []
        self._build()

    # -- allocate-time GPU objects ------------------------------------------------------
    def _build(self) -> None:
        gdev = self.gdev
        buf = self.garena.realize(gdev)
        self.constant_bytes = self.garena.const_bytes
        self.bytes_uploaded += self.constant_bytes
        programs = [p for part in self.parts if part.backend == pt.GPU for p in part.work]
        align = max(gdev.limits.get("min-uniform-buffer-offset-alignment", 256), 16)
        offsets, size = [], 0
        for p in programs:
            offsets.append(size)
            size += -(-len(p.params) // align) * align
        data = bytearray(max(size, 16))
        for p, off in zip(programs, offsets, strict=True):
            data[off:off + len(p.params)] = p.params
        self.ubuf = gdev.device.create_buffer_with_data(data=bytes(data), usage=wgpu.BufferUsage.UNIFORM)
        max_groups = gdev.limits.get("max-compute-workgroups-per-dimension", 65535)
        slots = dict(zip(map(id, programs), offsets, strict=True))
        self._dispatches: dict[int, list[tuple[Any, Any, tuple[int, int, int]]]] = {}
        for k, part in enumerate(self.parts):
            if part.backend != pt.GPU:
                continue
            out = self._dispatches[k] = []
            for p in part.work:
                if max(p.dispatch) > max_groups:
                    raise KernelError(f"{p.name}: dispatch {p.dispatch} exceeds {max_groups} workgroups per dimension")
                pipeline = get_pipeline(gdev, p)
                try:
                    bg = gdev.device.create_bind_group(label=p.name, layout=gdev.bind_group_layout, entries=[
                        {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": self.garena.total_bytes}},
                        {"binding": 1, "resource": {"buffer": self.ubuf, "offset": slots[id(p)],
                                                    "size": len(p.params)}},
                    ])
                except wgpu.GPUError as e:
                    raise KernelError(f"{p.name}: the GPU rejected its bind group: {e}") from e
                out.append((pipeline, bg, p.dispatch))
        stage = max([sum(t.padded for t in part.readbacks) for part in self.parts] + [4])
        self.staging = gdev.device.create_buffer(
            label="gpulite.readback", size=stage, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self._buffers = [self.ubuf, self.staging]
        self._host_valid = set(self.graph.inputs) | set(self.graph.outputs) | {
            t for part in self.parts if part.backend == pt.CPU for n in part.nodes for t in n.outputs}

    # -- run ------------------------------------------------------------------------------
    def invoke(self) -> None:
        q, buf = self.gdev.queue, self.garena.buffer
        for k, part in enumerate(self.parts):
            if part.backend == pt.CPU:
                for run in part.work:
                    run()
                for tr in part.uploads:
                    q.write_buffer(buf, tr.offset, self.arena[tr.offset:tr.offset + tr.padded])
                    self.bytes_uploaded += tr.nbytes
                continue
            enc = self.gdev.device.create_command_encoder()
            cp = enc.begin_compute_pass()
            for pipeline, bg, groups in self._dispatches[k]:
                cp.set_pipeline(pipeline)
                cp.set_bind_group(0, bg)
                cp.dispatch_workgroups(*groups)
            cp.end()
            self._readback(enc, part.readbacks, f"partition {k} ({len(part.work)} dispatches)")
        self.invokes += 1

    def _readback(self, enc: Any, transfers: list[pt.Transfer], what: str) -> None:
        """Finish ``enc`` with copies of ``transfers`` into staging, submit, and copy to the host."""
        pos = 0
        for tr in transfers:
            enc.copy_buffer_to_buffer(self.garena.buffer, tr.offset, self.staging, pos, tr.padded)
            pos += tr.padded
        try:
            self.gdev.queue.submit([enc.finish()])
        except wgpu.GPUError as e:
            raise KernelError(f"{what}: the GPU rejected the submitted work: {e}") from e
        if not transfers:
            return
        # Mapping waits for the submitted work; it is the invoke's only synchronisation point.
        self.staging.map_sync(wgpu.MapMode.READ, 0, pos)
        mem = None
        try:
            mem = np.frombuffer(self.staging.read_mapped(0, pos, copy=False), np.uint8)
            pos = 0
            for tr in transfers:
                self.arena[tr.offset:tr.offset + tr.nbytes] = mem[pos:pos + tr.nbytes]
                pos += tr.padded
                self.bytes_read_back += tr.nbytes
        finally:
            del mem
            self.staging.unmap()

    def write(self, i: int, arr: np.ndarray) -> None:
        """Set an input: into the host mirror and straight up to the GPU arena."""
        np.copyto(self.arrays[i], arr)
        off, n = self.plan.offsets[i], self.graph.tensors[i].nbytes
        padded = -(-n // 4) * 4
        if padded:
            self.gdev.queue.write_buffer(self.garena.buffer, off, self.arena[off:off + padded])
        self.bytes_uploaded += n

    def read(self, i: int) -> np.ndarray:
        """A copy of tensor i: from the host mirror when it is current there, else read back."""
        if i not in self.arrays:
            t = self.graph.tensors[i]
            raise ValueError(f"tensor {i} ({t.name!r}) holds no data in the plan")
        if i not in self._host_valid:
            tr = pt.Transfer(i, self.plan.offsets[i], self.graph.tensors[i].nbytes)
            if tr.padded > self.staging.size:
                self.staging.destroy()
                self.staging = self.gdev.device.create_buffer(
                    label="gpulite.readback", size=tr.padded,
                    usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
                self._buffers[1] = self.staging
            self._readback(self.gdev.device.create_command_encoder(), [tr], f"read of tensor {i}")
        return self.arrays[i].copy()

    def describe(self) -> dict[str, Any]:
        d = pt.describe(self.graph, self.parts)
        d.update({
            "device": self.gdev.name,
            "gpu_arena_bytes": self.garena.total_bytes,
            "constant_bytes": self.constant_bytes,
            "pipelines": len({p.key for part in self.parts if part.backend == pt.GPU for p in part.work}),
        })
        return d

    def close(self) -> None:
        """Release this plan's GPU buffers (pipelines stay cached on the device)."""
        for b in self._buffers:
            b.destroy()
        self._buffers = []
        self.garena.close()


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
