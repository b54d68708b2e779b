"""A compiled plan on the GPU: allocate-time objects, and the per-invoke encode and submit.

Everything that can be built once is built in ``__init__``: the arena with its constants,
one uniform buffer holding every dispatch's parameters, pipelines (from the device's cache)
and one bind group per dispatch. ``invoke`` then only records and submits: one command
encoder per GPU partition (one in total for a fully supported model), with the readbacks
of outputs and crossings appended to it; mapping the staging buffer is the only wait.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import wgpu

from gpulite.graph.ir import Graph
from gpulite.graph.plan import MemoryPlan

from . import partition as pt
from .arena import GpuArena
from .device import GpuDevice
from .program import KernelError, Program, get_pipeline


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
        self.garena.realize(gdev)
        self.constant_bytes = self.garena.const_bytes
        self.bytes_uploaded += self.constant_bytes
        programs = [p for part in self.parts if part.backend == pt.GPU for p in part.work]
        slots = self._pack_uniforms(programs)
        self._dispatches: dict[int, list[tuple[Any, Any, tuple[int, int, int]]]] = {
            k: [self._dispatch(p, slots[id(p)]) for p in part.work]
            for k, part in enumerate(self.parts) if part.backend == pt.GPU}
        stage = max([sum(t.padded for t in part.readbacks) for part in self.parts] + [4])
        self.staging = gdev.device.create_buffer(
            label="gpulite.readback", size=stage, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self._buffers = [self.ubuf, self.staging]
        self._host_valid = set(self.graph.inputs) | set(self.graph.outputs) | {
            t for part in self.parts if part.backend == pt.CPU for n in part.nodes for t in n.outputs}

    def _pack_uniforms(self, programs: list[Program]) -> dict[int, int]:
        """One uniform buffer with every program's block at an aligned offset; id -> offset."""
        align = max(self.gdev.limits.get("min-uniform-buffer-offset-alignment", 256), 16)
        slots, size = {}, 0
        for p in programs:
            slots[id(p)] = size
            size += -(-len(p.params) // align) * align
        data = bytearray(max(size, 16))
        for p in programs:
            data[slots[id(p)]:slots[id(p)] + len(p.params)] = p.params
        self.ubuf = self.gdev.device.create_buffer_with_data(data=bytes(data), usage=wgpu.BufferUsage.UNIFORM)
        return slots

    def _dispatch(self, p: Program, slot: int) -> tuple[Any, Any, tuple[int, int, int]]:
        """Pipeline, bind group and workgroup counts of one program, checked against the limits."""
        gdev, buf, size = self.gdev, self.garena.buffer, self.garena.total_bytes
        max_groups = gdev.limits.get("max-compute-workgroups-per-dimension", 65535)
        if max(p.dispatch) > max_groups:
            raise KernelError(f"{p.name}: dispatch {p.dispatch} exceeds {max_groups} workgroups per dimension")
        pipeline = get_pipeline(gdev, p)
        try:
            bg = gdev.device.create_bind_group(label=p.name, layout=gdev.bind_group_layout, entries=[
                {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": size}},
                {"binding": 1, "resource": {"buffer": self.ubuf, "offset": slot, "size": len(p.params)}},
                {"binding": 2, "resource": {"buffer": buf, "offset": 0, "size": size}},
            ])
        except wgpu.GPUError as e:
            raise KernelError(f"{p.name}: the GPU rejected its bind group: {e}") from e
        return pipeline, bg, p.dispatch

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
