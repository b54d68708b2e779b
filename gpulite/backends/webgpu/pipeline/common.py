"""Shared pieces of the pipeline calculators' GPU work: device, pipelines, tensors, transfer counters.

Every byte these helpers move between host and GPU is counted in one process-wide
:data:`COUNTERS` (``Inference`` adds its interpreter's traffic to the same counters), so a
test or ``gpulite graph run`` can state how much a graph moved per frame.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import wgpu

from gpulite.backends.webgpu.device import GpuDevice, get_device, submit_count
from gpulite.backends.webgpu.program import KernelError

_HERE = Path(__file__).parent
STORAGE_OUT = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


@dataclass
class TransferCounters:
    """Bytes moved host -> GPU and GPU -> host by pipeline calculators (thread-safe)."""

    bytes_uploaded: int = 0
    bytes_read_back: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, uploaded: int = 0, read_back: int = 0) -> None:
        with self._lock:
            self.bytes_uploaded += uploaded
            self.bytes_read_back += read_back

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"bytes_uploaded": self.bytes_uploaded, "bytes_read_back": self.bytes_read_back}


COUNTERS = TransferCounters()


def transfer_stats() -> dict[str, int]:
    """Bytes uploaded and read back by pipeline calculators (and their interpreters) so far, and
    the queue submits of gpulite's devices (``submits``, every submit in the process)."""
    return {**COUNTERS.snapshot(), "submits": submit_count()}


def record_transfer(uploaded: int = 0, read_back: int = 0) -> None:
    """Add traffic made elsewhere (an interpreter's invoke) to :data:`COUNTERS`."""
    COUNTERS.add(uploaded, read_back)


def shared_device(device: Any = None) -> GpuDevice:
    """The :class:`GpuDevice` pipeline work runs on: the one interpreters get by default."""
    if isinstance(device, GpuDevice):
        return device
    if device is None or isinstance(device, str):
        return get_device(device)
    return GpuDevice.wrap(device)


@cache
def _wgsl(name: str) -> str:
    return (_HERE / f"{name}.wgsl").read_text()


def compute_pipeline(gdev: GpuDevice, name: str) -> Any:
    """The pipeline of ``<name>.wgsl`` (entry point ``main``, layout from the shader), cached per device."""
    key = ("gpulite.pipeline", name)
    hit = gdev.pipelines.get(key)
    if hit is not None:
        return hit[1]
    code = _wgsl(name)
    try:
        with gdev.guard(f"pipeline {name}"):
            module = gdev.device.create_shader_module(label=f"gpulite.pipeline.{name}", code=code)
            pipeline = gdev.device.create_compute_pipeline(
                label=f"gpulite.pipeline.{name}", layout="auto", compute={"module": module, "entry_point": "main"})
    except wgpu.GPUError as e:
        raise KernelError(f"pipeline shader {name}.wgsl: the GPU rejected it: {e}") from e
    gdev.pipelines[key] = (code, pipeline)
    return pipeline


def write_padded(gdev: GpuDevice, buffer: Any, data: np.ndarray) -> int:
    """Upload ``data``'s bytes to the start of ``buffer`` (queue writes move whole 4-byte words)."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    n = raw.size
    body = n - n % 4
    if body:
        gdev.queue.write_buffer(buffer, 0, memoryview(raw[:body]))
    if n % 4:
        tail = np.zeros(4, np.uint8)
        tail[: n % 4] = raw[body:]
        gdev.queue.write_buffer(buffer, body, memoryview(tail))
    COUNTERS.add(uploaded=n)
    return n


class DeviceTensor:
    """A float32 tensor in a GPU buffer that the pipeline owns (a packet payload).

    Duck-compatible with the interpreter's ``GpuTensor`` (``buffer``, ``offset``, ``nbytes``,
    ``shape``, ``dtype``, ``layout``, ``data_sync()``), but never goes stale: the buffer is
    this tensor's own and is released when the last reference goes.
    """

    def __init__(self, gdev: GpuDevice, buffer: Any, offset: int, shape: tuple[int, ...],
                 dtype: Any = np.float32, layout: str = "NHWC") -> None:
        self.gdev, self.buffer, self.offset = gdev, buffer, int(offset)
        self.shape, self.dtype, self.layout = tuple(int(d) for d in shape), np.dtype(dtype), layout
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize

    @property
    def device(self) -> Any:
        return self.gdev.device

    def __repr__(self) -> str:
        return f"DeviceTensor(shape={self.shape}, dtype={self.dtype}, offset={self.offset}, layout={self.layout!r})"

    def data_sync(self) -> np.ndarray:
        """Read the tensor back (blocking); a new numpy array. Counted in :data:`COUNTERS`."""
        raw = read_back(self.gdev, [(self.buffer, self.offset, self.nbytes)], "DeviceTensor.data_sync")[0]
        return raw.view(self.dtype).reshape(self.shape)


def read_back(gdev: GpuDevice, ranges: list[tuple[Any, int, int]], what: str,
              staging: Any = None) -> list[np.ndarray]:
    """Copy byte ranges ``(buffer, offset, nbytes)`` through one mapped staging buffer; blocks.

    ``staging`` (MAP_READ | COPY_DST, large enough) is reused when given, else made and
    destroyed here. Returns one uint8 array per range; counts the bytes.
    """
    spans, pos = [], 0
    for _, _, n in ranges:
        spans.append(pos)
        pos += -(-n // 4) * 4
    total = max(pos, 4)
    own = staging is None
    with gdev.guard(what):
        if own:
            staging = gdev.device.create_buffer(label=f"gpulite.pipeline.{what}", size=total,
                                                usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        enc = gdev.device.create_command_encoder(label=what)
        for (buf, off, n), at in zip(ranges, spans, strict=True):
            if n:
                enc.copy_buffer_to_buffer(buf, off, staging, at, -(-n // 4) * 4)
        gdev.queue.submit([enc.finish()])
        staging.map_sync(wgpu.MapMode.READ, 0, total)
        try:
            mem = np.frombuffer(staging.read_mapped(0, total, copy=True), np.uint8)
        finally:
            staging.unmap()
            if own:
                staging.destroy()
    COUNTERS.add(read_back=sum(n for _, _, n in ranges))
    return [mem[at:at + n].copy() for (_, _, n), at in zip(ranges, spans, strict=True)]


def copy_tensors(gdev: GpuDevice, tensors: list[Any], what: str = "copy_tensors") -> list[DeviceTensor]:
    """GPU-side copies of tensors (e.g. an interpreter's outputs) into one new buffer; no readback.

    Each copy starts at a 256-byte aligned offset. The copies are submitted now, so they hold
    the values as of every earlier submission (the invoke that made them).
    """
    offsets, size = [], 0
    for t in tensors:
        offsets.append(size)
        size += -(-t.nbytes // 256) * 256
    with gdev.guard(what):
        buf = gdev.device.create_buffer(label=f"gpulite.pipeline.{what}", size=max(size, 4), usage=STORAGE_OUT)
        enc = gdev.device.create_command_encoder(label=what)
        for t, off in zip(tensors, offsets, strict=True):
            if t.nbytes:
                enc.copy_buffer_to_buffer(t.buffer, t.offset, buf, off, -(-t.nbytes // 4) * 4)
        gdev.queue.submit([enc.finish()])
    return [DeviceTensor(gdev, buf, off, t.shape, t.dtype) for t, off in zip(tensors, offsets, strict=True)]


def copy_and_read(gdev: GpuDevice, keep: list[Any], read: list[Any], what: str = "inference_outputs",
                  encode: Callable[[Any], list[Any]] | None = None) -> tuple[list[DeviceTensor], list[np.ndarray]]:
    """GPU copies of the ``keep`` tensors (as :func:`copy_tensors`) and host arrays of the ``read``
    ones, in one submit and one mapping: a model's small outputs come back while a large one (a
    mask) stays on the GPU. ``encode(encoder)``, when given, records GPU work into the same
    submit first and returns more tensors to read (their arrays follow ``read``'s): pose's
    heatmap window sums. Counts the bytes read."""
    offsets, size = [], 0
    for t in keep:
        offsets.append(size)
        size += -(-t.nbytes // 256) * 256
    with gdev.guard(what):
        enc = gdev.device.create_command_encoder(label=what)
        buf = gdev.device.create_buffer(label=f"gpulite.pipeline.{what}", size=max(size, 4), usage=STORAGE_OUT)
        for t, off in zip(keep, offsets, strict=True):
            if t.nbytes:
                enc.copy_buffer_to_buffer(t.buffer, t.offset, buf, off, -(-t.nbytes // 4) * 4)
        if encode is not None:
            read = [*read, *encode(enc)]
        spans, pos = [], 0
        for t in read:
            spans.append(pos)
            pos += -(-t.nbytes // 4) * 4
        staging = gdev.device.create_buffer(label=f"gpulite.pipeline.{what}.read", size=max(pos, 4),
                                            usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        for t, at in zip(read, spans, strict=True):
            if t.nbytes:
                enc.copy_buffer_to_buffer(t.buffer, t.offset, staging, at, -(-t.nbytes // 4) * 4)
        gdev.queue.submit([enc.finish()])
        staging.map_sync(wgpu.MapMode.READ, 0, max(pos, 4))
        try:
            mem = np.frombuffer(staging.read_mapped(0, max(pos, 4), copy=True), np.uint8)
        finally:
            staging.unmap()
            staging.destroy()
    COUNTERS.add(read_back=sum(t.nbytes for t in read))
    arrays = [mem[at:at + t.nbytes].view(np.dtype(t.dtype)).reshape(t.shape).copy()
              for t, at in zip(read, spans, strict=True)]
    return [DeviceTensor(gdev, buf, off, t.shape, t.dtype) for t, off in zip(keep, offsets, strict=True)], arrays
