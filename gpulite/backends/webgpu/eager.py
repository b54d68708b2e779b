"""Eager ops on WebGPU: one-node graphs compiled once, run on pooled buffers, no readback.

:mod:`gpulite.ops` builds a one-node :class:`~gpulite.graph.ir.Graph` per (op, shapes,
dtypes, options) and asks :meth:`WebGpuEager.compile` for it once. Compiling reuses the
backend's kernel factories and program machinery exactly as a model does: a
:class:`~.arena.GpuArena` laid out by the memory plan, the kernel's :class:`~.program.Program`
list, pipelines from the device's cache, one uniform buffer and one bind group per dispatch.

Each eager tensor owns a buffer from a :class:`~.pool.BufferPool`. Running an op records,
into a command encoder shared by consecutive ops, GPU-side copies of the inputs into the op's
arena, the dispatches, and a copy of each output into a fresh pooled buffer. The encoder is
submitted when data is read back, uploaded or waited for, or after ``MAX_PENDING`` ops: so a
chain of ops is a few submits and no readback until ``data()``. Reusing one arena for several
ops in one encoder is safe because WebGPU orders commands within an encoder.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import wgpu

from gpulite.backends.base import DeviceKind
from gpulite.backends.kernels import get_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph
from gpulite.graph.plan import plan_memory

from .arena import GpuArena
from .context import GpuContext
from .device import GpuDevice
from .gpu_tensor import stage, unstage
from .pipelines import prepare_pipelines
from .pool import BufferPool
from .program import KernelError, Program, get_pipeline
from .requirements import check_device, plan_needs

log = logging.getLogger(__name__)

MAX_PENDING = 64  # ops recorded before the shared encoder is submitted anyway


def _pad4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass
class GpuCompiled:
    """One op compiled for eager use: its arena, uniforms, dispatches and I/O offsets."""

    name: str
    arena: GpuArena
    ubuf: Any
    dispatches: list[tuple[Any, Any, tuple[int, int, int]]]
    inputs: list[tuple[int, int]]  # (byte offset in the arena, nbytes) per runtime input
    outputs: list[tuple[int, int]]
    gpu_bytes: int = 0
    closed: bool = False

    def buffers(self) -> list[Any]:
        """Its GPU buffers, handed over for destruction; it is closed afterwards."""
        self.closed = True
        bufs = [b for b in (self.arena.buffer, self.ubuf) if b is not None]
        self.arena.buffer = self.ubuf = None
        return bufs


class WebGpuEager:
    """Eager-op executor on one :class:`~.device.GpuDevice`.

    Parameters
    ----------
    gdev : GpuDevice
    name : str
        The registered backend name; kernels are looked up under it.
    """

    device_kind: DeviceKind = "gpu"

    def __init__(self, gdev: GpuDevice, name: str = "webgpu") -> None:
        self.gdev, self.name = gdev, name
        self.pool = BufferPool(gdev.device, destroy=self._destroy)
        self._graveyard: list[Any] = []  # buffers to destroy once the encoder naming them is submitted
        # Eager ops are meant for one thread, but a tensor's __del__ may release its buffer
        # from whichever thread the garbage collector runs in.
        self._lock = threading.RLock()
        self._encoder: Any = None
        self._pending = 0
        self._fence: Any = None
        self.submits = 0
        self.uploads = 0
        self.readbacks = 0
        self.closed = False
        self._compiled_bytes = 0

    @property
    def device(self) -> Any:
        """The ``wgpu.GPUDevice`` tensors of this executor live on."""
        return self.gdev.device

    # -- compile --------------------------------------------------------------------------
    def compile(self, graph: Graph) -> GpuCompiled:
        """Compile the one-node ``graph``.

        Raises
        ------
        UnsupportedOpError
            When this backend has no kernel for the op, or the kernel declines the node.
        """
        node = graph.nodes[0]
        factory = get_kernel(node.op, self.name)
        if factory is None:
            raise UnsupportedOpError(node.op, node.index, self.name)
        plan = plan_memory(graph, [node])
        garena = GpuArena(plan.arena_bytes)
        out = factory(node, GpuContext(graph, node, plan, garena, self.gdev))
        if garena.checks:  # run-time indices or codes: their check needs a readback, which eager ops never wait for
            raise UnsupportedOpError(node.op, node.index, self.name, "a run-time check of its input (the cpu "
                                     "kernel's)")
        programs = [out] if isinstance(out, Program) else list(out)
        programs = [p for p in programs if p.threads > 0]
        align = max(self.gdev.limits.get("min-uniform-buffer-offset-alignment", 256), 16)
        slots, size = [], 0
        for p in programs:
            slots.append(size)
            size += -(-len(p.params) // align) * align
        size = max(size, 16)
        with self.gdev.guard("eager compile"):
            check_device(self.gdev, plan_needs(arena_bytes=garena.total_bytes, programs=programs,
                                               buffer_bytes=max(garena.total_bytes, size)))
            prepare_pipelines(self.gdev, programs)
            garena.realize(self.gdev)
            data = bytearray(size)
            for p, s in zip(programs, slots, strict=True):
                data[s:s + len(p.params)] = p.params
            ubuf = self.device.create_buffer_with_data(label=f"gpulite.eager.{node.op}", data=bytes(data),
                                                       usage=wgpu.BufferUsage.UNIFORM)
            dispatches = [self._dispatch(p, s, garena, ubuf) for p, s in zip(programs, slots, strict=True)]
        io = [(plan.offsets[i], graph.tensors[i].nbytes) for i in graph.inputs]
        outs = [(plan.offsets[o], graph.tensors[o].nbytes) for o in graph.outputs]
        compiled = GpuCompiled(node.op, garena, ubuf, dispatches, io, outs, garena.total_bytes + size)
        self._compiled_bytes += compiled.gpu_bytes
        return compiled

    def _dispatch(self, p: Program, slot: int, garena: GpuArena, ubuf: Any) -> tuple[Any, Any, tuple[int, int, int]]:
        # The same bindings as a model's dispatches (executable.py): the arena as f32 words, the
        # uniform block, the arena as vec4s, and for float16 weights the arena as vec4<f16>.
        pipeline = get_pipeline(self.gdev, p)
        size = garena.total_bytes
        entries = [
            {"binding": 0, "resource": {"buffer": garena.buffer, "offset": 0, "size": size}},
            {"binding": 1, "resource": {"buffer": ubuf, "offset": slot, "size": len(p.params)}},
            {"binding": 2, "resource": {"buffer": garena.buffer, "offset": 0, "size": size}},
        ]
        if p.weights == "f16":
            entries.append({"binding": 3, "resource": {"buffer": garena.buffer, "offset": 0, "size": size}})
        try:
            bg = self.device.create_bind_group(label=p.name, layout=self.gdev.bind_group_layout_for(p.weights),
                                               entries=entries)
        except wgpu.GPUError as e:
            raise KernelError(f"{p.name}: the GPU rejected its bind group: {e}") from e
        return pipeline, bg, p.dispatch

    def discard(self, compiled: GpuCompiled) -> None:
        """Release a compiled op's GPU objects (the op cache evicted it)."""
        with self._lock:
            if not compiled.closed:
                self._compiled_bytes -= compiled.gpu_bytes
                for b in compiled.buffers():
                    self._destroy(b)

    def _destroy(self, buf: Any) -> None:
        """Destroy ``buf`` now, or after the next submit while recorded commands may name it."""
        if self._encoder is not None:
            self._graveyard.append(buf)
            return
        try:
            buf.destroy()
        except Exception:  # a lost device may refuse; dropping the object releases it anyway
            log.debug("destroying a buffer failed", exc_info=True)

    # -- run --------------------------------------------------------------------------------
    def _enc(self) -> Any:
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder(label="gpulite.eager")
        return self._encoder

    def run(self, compiled: GpuCompiled, buffers: list[Any]) -> list[Any]:
        """Record ``compiled`` on ``buffers`` (one per runtime input); returns the output buffers."""
        with self._lock:
            try:
                outs = self._record(compiled, buffers)
            except BaseException:
                self._encoder, self._pending = None, 0  # a half-recorded encoder cannot be submitted
                raise
            self._pending += 1
            if self._pending >= MAX_PENDING:
                self.flush()
            return outs

    def _record(self, compiled: GpuCompiled, buffers: list[Any]) -> list[Any]:
        with self.gdev.guard(f"eager {compiled.name}"):
            enc = self._enc()
            dst = compiled.arena.buffer
            for (off, n), b in zip(compiled.inputs, buffers, strict=True):
                if n:
                    enc.copy_buffer_to_buffer(b, 0, dst, off, _pad4(n))
            if compiled.dispatches:
                cp = enc.begin_compute_pass()
                for pipeline, bg, groups in compiled.dispatches:
                    cp.set_pipeline(pipeline)
                    cp.set_bind_group(0, bg)
                    cp.dispatch_workgroups(*groups)
                cp.end()
            outs = []
            for off, n in compiled.outputs:
                ob = self.pool.acquire(n)
                if n:
                    enc.copy_buffer_to_buffer(dst, off, ob, 0, _pad4(n))
                outs.append(ob)
        return outs

    def flush(self) -> None:
        """Submit the ops recorded so far."""
        with self._lock:
            if self._encoder is not None:
                enc, self._encoder, self._pending = self._encoder, None, 0
                with self.gdev.guard("eager submit"):
                    self.gdev.queue.submit([enc.finish()])
                self.submits += 1
            dead, self._graveyard = self._graveyard, []
            for b in dead:
                self._destroy(b)

    def wait(self) -> None:
        """Submit pending ops and block until the GPU has finished all submitted work."""
        with self._lock, self.gdev.guard("eager wait"):
            self.flush()
            if self._fence is None:
                self._fence = (
                    self.device.create_buffer(label="gpulite.fence.src", size=4, usage=wgpu.BufferUsage.COPY_SRC),
                    self.device.create_buffer(label="gpulite.fence", size=4,
                                              usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST))
                self._compiled_bytes += 8
            src, staging = self._fence
            enc = self.device.create_command_encoder(label="gpulite.fence")
            enc.copy_buffer_to_buffer(src, 0, staging, 0, 4)
            self.gdev.queue.submit([enc.finish()])
            staging.map_sync(wgpu.MapMode.READ, 0, 4)
            staging.unmap()

    # -- transfers ------------------------------------------------------------------------
    def upload(self, array: np.ndarray) -> Any:
        """A pooled buffer holding ``array``'s bytes (C order)."""
        # write_buffer runs at queue order *now*, ahead of the unsubmitted encoder, whose
        # commands may still read the buffer this pool hands out again: submit them first.
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        if raw.size % 4:
            raw = np.concatenate([raw, np.zeros(-raw.size % 4, np.uint8)])
        with self._lock:
            self.flush()
            buf = self.pool.acquire(raw.size)
            if raw.size:
                with self.gdev.guard("eager upload"):
                    self.gdev.queue.write_buffer(buf, 0, raw)
            self.uploads += 1
        return buf

    def read(self, buf: Any, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of ``buf`` as a new uint8 array; waits for the GPU."""
        with self._lock:
            self.flush()
            staging = stage(self.gdev, buf, 0, nbytes, "eager read")
            self.readbacks += 1
        with self.gdev.guard("eager read"):
            staging.map_sync(wgpu.MapMode.READ)
        return unstage(self.gdev, staging, nbytes, "eager read")

    async def read_async(self, buf: Any, nbytes: int) -> np.ndarray:
        """:meth:`read` without blocking the event loop (awaits wgpu's buffer map)."""
        with self._lock:
            self.flush()
            staging = stage(self.gdev, buf, 0, nbytes, "eager data()")
            self.readbacks += 1
        with self.gdev.guard("eager data()"):
            await staging.map_async(wgpu.MapMode.READ)
        return unstage(self.gdev, staging, nbytes, "eager data()")

    def release(self, buf: Any) -> None:
        """Give a tensor's buffer back to the pool."""
        with self._lock:
            self.pool.release(buf)

    # -- accounting and lifetime ----------------------------------------------------------
    def allocated_bytes(self) -> int:
        """GPU bytes held: pooled buffers (in use and free) and compiled ops' arenas and uniforms."""
        return self.pool.allocated_bytes + self._compiled_bytes

    def free_bytes(self) -> int:
        return self.pool.free_bytes

    def close(self) -> None:
        """Drop pending work and destroy the pool's free buffers (the backend was removed)."""
        self._encoder, self._pending = None, 0
        self.pool.close()
        for b in [*self._graveyard, *(self._fence or ())]:
            self._destroy(b)
        self._graveyard, self._fence = [], None
        self.closed = True
