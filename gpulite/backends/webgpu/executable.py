"""A compiled plan on the GPU: allocate-time objects, and the per-invoke encode and submit.

Everything that can be built once is built in ``__init__``, after checking every limit the
plan needs against the device (:mod:`.requirements`): pipelines (compiled up front, in
parallel where it pays, :mod:`.pipelines`), the arena with its constants, one uniform buffer
holding every dispatch's parameters and one bind group per dispatch. ``invoke`` then only
records and submits: one command encoder per GPU partition (one in total for a fully
supported model), starting with GPU-side copies of bound input buffers, the partition's
dispatches recorded by one native call (:mod:`.encode`), and ending with the readbacks of
outputs and crossings; mapping the staging buffer is the only wait, ``"passive"`` (block
until wgpu-native reports the map) or ``"active"`` (poll the device from this thread until
it does: lower latency, a busy core). With ``outputs_on_gpu`` and no CPU partition nothing is
waited for (the delegate's "do not wait").

GPU-resident I/O: :meth:`WebGpuExecutable.bind` makes an application buffer an input (copied
on the GPU inside the invoke's encoder), ``outputs_on_gpu`` skips the output readbacks, and
:meth:`WebGpuExecutable.gpu_tensor` hands out :class:`~.gpu_tensor.GpuTensor` handles. Every
byte that crosses between host and GPU is counted (``bytes_uploaded``/``bytes_read_back``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import ffi, lib

from gpulite.backends.base import GpuIO, Observer
from gpulite.graph.ir import Graph
from gpulite.graph.plan import MemoryPlan

from . import instrument
from . import partition as pt
from .arena import GpuArena, InvokeCheck
from .binding import check_binding, check_input
from .context import NHWC
from .device import GpuDevice
from .encode import Recording, mode
from .gpu_tensor import GpuTensor, stage, unstage
from .pipelines import prepare_pipelines
from .program import KernelError, Program, get_pipeline
from .requirements import check_device, plan_needs

_STAGING_USAGE = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
WAITS = ("passive", "active")


class WebGpuExecutable:
    """A compiled plan on one device; owns its arena, uniform and staging buffers.

    ``arena``/``arrays`` are the host mirror (inputs as written, outputs after ``invoke``
    unless ``outputs_on_gpu``); ``tensor()`` views of GPU intermediates are not kept current.
    Everything it owns is released by :meth:`close` (``__del__`` only as a safety net).

    Attributes
    ----------
    epoch : int
        Bumped by every ``invoke`` and by ``close``; :class:`GpuTensor` handles from an older
        epoch are stale.
    bytes_uploaded, bytes_read_back, invokes : int
        Counters since allocation; constants count as uploaded.
    """

    def __init__(self, gdev: GpuDevice, graph: Graph, plan: MemoryPlan, host: np.ndarray,
                 arrays: dict[int, np.ndarray], garena: GpuArena, parts: list[pt.Partition], *,
                 outputs_on_gpu: bool = False, kernels: str = "webgpu", wait: str = "passive",
                 encoder: str | None = None) -> None:
        if wait not in WAITS:
            raise ValueError(f"wait must be one of {WAITS}, got {wait!r}")
        self.gdev, self.graph, self.plan, self.parts, self.kernels = gdev, graph, plan, parts, kernels
        self.arena, self.arrays, self.garena = host, arrays, garena
        self.outputs_on_gpu, self.wait_mode, self.encoder = outputs_on_gpu, wait, encoder or mode()
        self.bytes_uploaded = 0
        self.bytes_read_back = 0
        self.invokes = 0
        self.epoch = 0
        self.closed = False
        self._buffers: list[Any] = []
        self._dispatches: dict[int, list[tuple[Any, Any, tuple[int, int, int]]]] = {}
        self._recordings: dict[int, Recording] = {}
        self._bound: dict[int, tuple[Any, int]] = {}  # input tensor -> (application buffer, byte offset)
        self._fresh: set[int] = set()  # whole-invoke tensors read back (host) or uploaded (GPU) this epoch
        self._counts: dict[int, list[int] | None] = {}  # dispatches per node of each GPU partition (observers)
        self._analyse()
        with gdev.guard("allocate_tensors"):
            self._build()

    # -- allocate-time analysis and GPU objects -----------------------------------------
    def _analyse(self) -> None:
        """Which tensors each side holds after an invoke, and what each partition reads back."""
        cpu_parts = [p for p in self.parts if p.backend == pt.CPU]
        gpu_parts = [p for p in self.parts if p.backend == pt.GPU]
        made_on_cpu = {t for p in cpu_parts for n in p.nodes for t in n.outputs}
        self._cpu_reads = {t for p in cpu_parts for n in p.nodes for t in n.inputs}
        gpu_reads = {t for p in gpu_parts for n in p.nodes for t in n.inputs}
        # A variable (LSTM state) is current on the side of the node that updates it.
        host_variables = {t.index for t in self.graph.tensors if t.is_variable and t.index not in gpu_reads}
        self._on_host_always = set(self.graph.inputs) | made_on_cpu | host_variables
        self._on_gpu_always = (set(self.graph.inputs) | {t for p in gpu_parts for n in p.nodes for t in n.outputs}
                               | {tr.tensor for p in cpu_parts for tr in p.uploads})
        self._readbacks = {k: [tr for tr in p.readbacks if not (self.outputs_on_gpu and tr.for_output)]
                           for k, p in enumerate(self.parts) if p.backend == pt.GPU}

    def _build(self) -> None:
        gdev = self.gdev
        gdev.check_alive("allocate_tensors")
        programs = [p for part in self.parts if part.backend == pt.GPU for p in part.work]
        slots, ubytes = self._uniform_layout(programs)
        cpu_inputs = [i for i in self.graph.inputs if i in self._cpu_reads and i in self.plan.offsets]
        self._checks = [c for _, c in self.garena.checks]  # read with the last GPU partition's outputs
        stage_bytes = max([sum(t.padded for t in trs) for trs in self._readbacks.values()]
                          + [sum(-(-self.graph.tensors[i].nbytes // 4) * 4 for i in cpu_inputs), 4])
        stage_bytes += 4 * sum(c.words for c in self._checks)
        needs = plan_needs(arena_bytes=self.garena.total_bytes, programs=programs,
                           buffer_bytes=max(self.garena.total_bytes, ubytes, stage_bytes))
        features = ("shader-f16",) if any("f16" in (p.key[-1], p.math) for p in programs) else ()  # enable f16;
        check_device(gdev, needs, features=features)  # everything missing in one message, before any buffer exists
        prepare_pipelines(gdev, programs)
        self.garena.realize(gdev)
        self.constant_bytes = self.garena.const_bytes
        self.bytes_uploaded += self.constant_bytes
        data = bytearray(ubytes)
        for p in programs:
            data[slots[id(p)]:slots[id(p)] + len(p.params)] = p.params
        self.ubuf = gdev.device.create_buffer_with_data(
            label="gpulite.uniforms", data=bytes(data), usage=wgpu.BufferUsage.UNIFORM)
        self.staging = gdev.device.create_buffer(label="gpulite.readback", size=stage_bytes, usage=_STAGING_USAGE)
        self._buffers = [self.ubuf, self.staging]
        self._dispatches = {k: [self._dispatch(p, slots[id(p)]) for p in part.work]
                            for k, part in enumerate(self.parts) if part.backend == pt.GPU}
        self._last_gpu = max(self._dispatches, default=-1)
        self._recordings = {k: self._recording(k, d, self._readbacks[k], self._checks if k == self._last_gpu else [])
                            for k, d in self._dispatches.items()}

    def _uniform_layout(self, programs: list[Program]) -> tuple[dict[int, int], int]:
        """Every program's uniform block at an aligned offset of one buffer: (id -> offset, size)."""
        align = max(self.gdev.limits.get("min-uniform-buffer-offset-alignment", 256), 16)
        slots, size = {}, 0
        for p in programs:
            slots[id(p)] = size
            size += -(-len(p.params) // align) * align
        return slots, max(size, 16)

    def _dispatch(self, p: Program, slot: int) -> tuple[Any, Any, tuple[int, int, int]]:
        """Pipeline, bind group and workgroup counts of one program."""
        gdev, buf, size = self.gdev, self.garena.buffer, self.garena.total_bytes
        pipeline = get_pipeline(gdev, p)
        entries = [
            {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": size}},
            {"binding": 1, "resource": {"buffer": self.ubuf, "offset": slot, "size": len(p.params)}},
            {"binding": 2, "resource": {"buffer": buf, "offset": 0, "size": size}},
        ]
        if p.weights == "f16":  # the arena again, for the float16 weights
            entries.append({"binding": 3, "resource": {"buffer": buf, "offset": 0, "size": size}})
        try:
            bg = gdev.device.create_bind_group(label=p.name, layout=gdev.bind_group_layout_for(p.weights),
                                               entries=entries)
        except wgpu.GPUError as e:
            raise KernelError(f"{p.name}: the GPU rejected its bind group: {e}") from e
        return pipeline, bg, p.dispatch

    # -- run ------------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self.closed:
            raise RuntimeError(f"{what}: this compiled plan was closed; call allocate_tensors() again")

    @property
    def gpu_io(self) -> GpuIO:
        return self

    def stores(self, i: int) -> bool:
        return i in self.arrays

    def invoke(self, observer: Observer | None = None) -> None:
        """Run the plan; with an ``observer``, every GPU node is its own submit followed by a
        wait, so each is timed and its outputs can be read (:mod:`.instrument`)."""
        self._check_open("invoke()")
        self.epoch += 1  # first: even a failed invoke leaves no handle claiming the old outputs
        self._fresh = set()
        if observer is None:
            plan = self.parts, self._recordings, self._readbacks
        else:
            plan = instrument.observed_plan(self, observer, self._counts)
        with self.gdev.guard("invoke"):
            try:
                self._run(*plan)
            except Exception:
                self._clear_sticky_checks()
                raise
        self.invokes += 1

    def _clear_sticky_checks(self) -> None:
        """Zero the sticky checks' words after a failed invoke (a check's own error, or any
        other before the words were read), so the next invoke reports only its own inputs."""
        for c in self._checks:
            if c.sticky:
                try:
                    self.gdev.queue.write_buffer(self.garena.buffer, c.offset, np.zeros(c.words, np.uint32))
                except Exception:  # a lost device: the invoke's own error is the one to raise
                    return

    def _run(self, parts: list[pt.Partition], dispatches: dict[int, Any], readbacks: dict[int, list]) -> None:
        """Run ``parts``: the plan's own (``dispatches`` holds its :class:`Recording` per GPU
        partition) or an observed plan's (lists of dispatches, recorded here)."""
        before = self._bound_copies() if self._bound else []
        host_bound = [self._transfer(i) for i in self._bound if i in self._cpu_reads]
        if host_bound:  # a CPU kernel reads a bound input: bring it up and back before anything runs
            self._submit(self._recording("bound-inputs", [], host_bound), before, host_bound,
                         "bound inputs read by the cpu")
            before = []
        last_gpu = self._last_gpu if dispatches is self._recordings else \
            max((k for k, p in enumerate(parts) if p.backend == pt.GPU), default=-1)
        q, buf = self.gdev.queue, self.garena.buffer
        for k, part in enumerate(parts):
            if part.backend == pt.CPU:
                for run in part.work:
                    run()
                for tr in part.uploads:
                    q.write_buffer(buf, tr.offset, self.arena[tr.offset:tr.offset + tr.padded])
                    self.bytes_uploaded += tr.nbytes
                continue
            checks = self._checks if k == last_gpu else []
            rec = dispatches[k]
            if not isinstance(rec, Recording):  # an observed plan's list of one node's dispatches
                rec = self._recording(k, rec, readbacks[k], checks)
            # Bound inputs are copied on the GPU in front of the first partition's pass.
            self._submit(rec, before, readbacks[k], f"partition {k} ({len(part.work)} dispatches)", checks)
            before = []

    def _recording(self, k: int | str, dispatches: list, transfers: list[pt.Transfer],
                   checks: Sequence[InvokeCheck] = ()) -> Recording:
        """Partition ``k``'s invoke: its dispatches, then copies of ``transfers`` and of
        ``checks``' words into staging, in that order."""
        buf, pos, after = self.garena.buffer, 0, []
        for tr in transfers:
            after.append((buf, tr.offset, self.staging, pos, tr.padded))
            pos += tr.padded
        for c in checks:
            after.append((buf, c.offset, self.staging, pos, 4 * c.words))
            pos += 4 * c.words
        label = f"gpulite.partition{k}" if isinstance(k, int) else f"gpulite.{k}"
        return Recording(self.gdev.device, self.gdev.queue, dispatches, self.encoder, after=after, label=label)

    def _transfer(self, i: int) -> pt.Transfer:
        return pt.Transfer(i, self.plan.offsets[i], self.graph.tensors[i].nbytes)

    def _bound_copies(self) -> list[tuple[Any, int, Any, int, int]]:
        buf, copies = self.garena.buffer, []
        for i, (src, off) in self._bound.items():
            tr = self._transfer(i)
            if tr.padded:
                copies.append((src, off, buf, tr.offset, tr.padded))
        return copies

    def _submit(self, rec: Recording, before: list, transfers: list[pt.Transfer], what: str,
                checks: Sequence[InvokeCheck] = ()) -> None:
        """Encode and submit ``rec`` (copies ``before`` in front), then copy what it staged
        (``transfers``, then ``checks``' words) to the host; raise the first error a check reports."""
        try:
            rec.submit(before)
        except wgpu.GPUError as e:
            raise KernelError(f"{what}: the GPU rejected the submitted work: {e}") from e
        finally:
            self.gdev.queue.count()
        pos = at = sum(tr.padded for tr in transfers) if transfers else 0
        pos += 4 * sum(c.words for c in checks) if checks else 0
        if not pos:
            return
        # Mapping waits for the submitted work; it is the invoke's only synchronisation point.
        self._map(pos)
        mem = None
        try:
            mem = np.frombuffer(self.staging.read_mapped(0, pos, copy=False), np.uint8)
            pos = 0
            for tr in transfers:
                self.arena[tr.offset:tr.offset + tr.nbytes] = mem[pos:pos + tr.nbytes]
                pos += tr.padded
                self.bytes_read_back += tr.nbytes
                if tr.tensor in self.graph.outputs or tr.tensor in self.graph.inputs:
                    self._fresh.add(tr.tensor)  # whole-invoke lifetime: the mirror stays right
            words = mem[at:].view(np.uint32).copy() if checks else None
        finally:
            del mem
            self.staging.unmap()
        for c in checks:
            error = c.error(words[:c.words])
            if error is not None:
                raise error
            words = words[c.words:]

    def _map(self, size: int) -> None:
        """Map ``size`` bytes of the staging buffer for reading, waiting as :attr:`wait_mode` says."""
        if self.wait_mode == "passive":
            self.staging.map_sync(wgpu.MapMode.READ, 0, size)
            return
        promise = self.staging.map_async(wgpu.MapMode.READ, 0, size)
        device = self.gdev.device._internal
        while promise._state == "pending":  # until wgpu-native's map callback has run
            lib.wgpuDevicePoll(device, False, ffi.NULL)
        promise.sync_wait()  # resolves it (or raises the map's error)

    def wait(self) -> None:
        """Block until all work submitted so far has finished (a 4-byte fence copy, not counted)."""
        self._check_open("wait()")
        with self.gdev.guard("wait"):
            enc = self.gdev.device.create_command_encoder(label="gpulite.fence")
            enc.copy_buffer_to_buffer(self.garena.buffer, 0, self.staging, 0, 4)
            self.gdev.queue.submit([enc.finish()])
            self._map(4)
            self.staging.unmap()

    # -- host I/O -----------------------------------------------------------------------
    def write(self, i: int, arr: np.ndarray) -> None:
        """Set an input: into the host mirror and straight up to the GPU arena (unbinds it)."""
        self._check_open("set_tensor()")
        off, n = self.plan.offsets[i], self.graph.tensors[i].nbytes
        raw = np.ascontiguousarray(arr, dtype=self.arrays[i].dtype).reshape(-1).view(np.uint8)
        if n % 4:  # write_buffer moves whole words; the arena slot is 256-byte aligned, so pad
            raw = np.concatenate([raw, np.zeros(-n % 4, np.uint8)])
        if n:
            with self.gdev.guard("set_tensor"):
                self.gdev.queue.write_buffer(self.garena.buffer, off, raw)
        # The host mirror changes only once the GPU accepted the data: a failed set_tensor
        # (lost device) leaves the previous input in place, for recover() to carry over.
        np.copyto(self.arrays[i], arr)
        self._bound.pop(i, None)
        self.bytes_uploaded += n

    def _on_host(self, i: int) -> bool:
        return i in self._fresh or (i in self._on_host_always and i not in self._bound)

    def ensure_readable(self, i: int) -> None:
        """Make the host mirror hold tensor i, reading it back only if it is not there yet."""
        self._check_open("ensure_readable()")
        if i not in self.arrays:
            t = self.graph.tensors[i]
            raise ValueError(f"tensor {i} ({t.name!r}) holds no data in the plan")
        self.gdev.check_alive("reading a tensor")
        if self._on_host(i):
            return
        src, off = self._bound.get(i, (self.garena.buffer, self.plan.offsets[i]))
        nbytes = self.graph.tensors[i].nbytes
        staging = stage(self.gdev, src, off, nbytes, f"read of tensor {i}")
        with self.gdev.guard(f"read of tensor {i}"):
            staging.map_sync(wgpu.MapMode.READ)
        raw = unstage(self.gdev, staging, nbytes, f"read of tensor {i}")
        start = self.plan.offsets[i]
        self.arena[start:start + nbytes] = raw
        self.bytes_read_back += nbytes
        if i in self.graph.outputs or i in self.graph.inputs:
            self._fresh.add(i)

    def read(self, i: int) -> np.ndarray:
        """A copy of tensor i: from the host mirror when it is current there, else read back."""
        self.ensure_readable(i)
        return self.arrays[i].copy()

    # -- GPU I/O ------------------------------------------------------------------------
    def bind(self, i: int, buffer: Any, *, offset: int = 0, layout: str = NHWC) -> None:
        """Make ``buffer[offset:]`` input i (copied on the GPU at each invoke); None unbinds.

        See ``Interpreter.bind_input`` for the contract.
        """
        self._check_open("bind_input()")
        if buffer is None:
            check_input(self.graph, i)
            if self._bound.pop(i, None) is not None and i in self.arrays:
                # Invokes while bound overwrote the arena slot: put back the host value, which
                # is what the input is again from now on (and what get_tensor reports).
                self.write(i, self.arrays[i].copy())
            return
        check_binding(self.gdev, self.graph, i, buffer, offset=offset, layout=layout, stored=i in self.arrays)
        self._bound[i] = (buffer, int(offset))

    @property
    def bound_inputs(self) -> list[int]:
        return sorted(self._bound)

    def host_inputs(self) -> dict[int, np.ndarray]:
        """Copies of the inputs as last set from the host (bound ones left out), for ``recover``."""
        return {i: self.arrays[i].copy() for i in self.graph.inputs if i in self.arrays and i not in self._bound}

    def gpu_tensor(self, i: int) -> GpuTensor:
        """Output i as a :class:`GpuTensor` (no readback); valid until the next invoke."""
        self._check_open("get_output_gpu()")
        t = self.graph.tensors[i]
        if i not in self.graph.outputs:
            raise ValueError(f"tensor {i} ({t.name!r}) is not a graph output; outputs are {list(self.graph.outputs)}")
        if i not in self.plan.offsets:
            raise ValueError(f"output {i} ({t.name!r}) holds no data in the plan")
        self.gdev.check_alive("get_output_gpu")
        if i not in self._on_gpu_always and i not in self._fresh:
            # Made by a CPU kernel and read by no GPU node: it only exists on the host yet.
            tr = self._transfer(i)
            with self.gdev.guard("get_output_gpu"):
                self.gdev.queue.write_buffer(self.garena.buffer, tr.offset, self.arena[tr.offset:tr.offset + tr.padded])
            self.bytes_uploaded += tr.nbytes
            self._fresh.add(i)
        return GpuTensor(owner=self, epoch=self.epoch, index=i, name=t.name, buffer=self.garena.buffer,
                         offset=self.plan.offsets[i], nbytes=t.nbytes, shape=t.shape, dtype=t.dtype, layout=NHWC)

    # -- reporting and lifetime ---------------------------------------------------------
    def transfer_stats(self) -> dict[str, int]:
        """Bytes moved between host and GPU since allocation (constants included), and invokes."""
        return {"bytes_uploaded": self.bytes_uploaded, "bytes_read_back": self.bytes_read_back,
                "constant_bytes": self.constant_bytes, "invokes": self.invokes}

    def describe(self) -> dict[str, Any]:
        d = pt.describe(self.graph, self.parts, bound=set(self._bound), outputs_on_gpu=self.outputs_on_gpu)
        d.update({
            "device": self.gdev.name,
            "gpu_arena_bytes": self.garena.total_bytes,
            "constant_bytes": self.constant_bytes,
            "pipelines": len({p.key for part in self.parts if part.backend == pt.GPU for p in part.work}),
            "outputs_on_gpu": self.outputs_on_gpu,
            # the TFLite GPU delegate's wait types: nothing is waited for when nothing is read back
            "wait": "do-not-wait" if self.outputs_on_gpu and not any(self._readbacks.values()) else self.wait_mode,
            "encoder": self.encoder,
            "bound_inputs": self.bound_inputs,
            "transfers": self.transfer_stats(),
        })
        return d

    def close(self) -> None:
        """Release this plan's GPU buffers and bind groups (pipelines stay cached on the device).

        Idempotent; safe on a lost device. Outstanding :class:`GpuTensor` handles go stale.
        """
        if self.closed:
            return
        self.closed = True
        self.epoch += 1
        for b in self._buffers:
            try:
                b.destroy()
            except Exception:  # a lost device may refuse; the object is released when dropped anyway
                pass
        self._buffers, self._dispatches, self._recordings, self._bound = [], {}, {}, {}
        self.ubuf = self.staging = None
        self.garena.close()

    def __del__(self) -> None:  # safety net only: owners call close()
        try:
            if not getattr(self, "closed", True):
                self.close()
        except Exception:
            pass
