"""A graph output left in GPU memory (TF.js ``dataToGPU``), and the readbacks behind it.

:class:`GpuTensor` names a byte range of the executable's arena: the ``wgpu.GPUBuffer``,
offset, size, shape, dtype and layout. Creating one moves no data. Reading it back is
explicit (:meth:`GpuTensor.data` awaits wgpu's asynchronous map, :meth:`GpuTensor.data_sync`
blocks), and :meth:`GpuTensor.copy` makes a GPU-side copy that the caller owns.

Each readback goes through its own short-lived staging buffer rather than the executable's:
two ``data()`` calls may be in flight at once, and a mapped staging buffer cannot take the
next invoke's copies.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import wgpu

from gpulite.errors import StaleTensorError

_COPY_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def _padded(n: int) -> int:
    return -(-n // 4) * 4  # buffer copies and maps move whole 4-byte words


def stage(gdev: Any, src: Any, offset: int, nbytes: int, what: str) -> Any:
    """Copy ``src[offset:offset+nbytes]`` into a new mappable buffer and submit; returns it.

    The copy is ordered after all work already submitted on the queue, so it snapshots
    the range as of this call even if more work is submitted before the map completes.
    """
    size = max(_padded(nbytes), 4)
    with gdev.guard(what):
        staging = gdev.device.create_buffer(
            label="gpulite.readback.tensor", size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        enc = gdev.device.create_command_encoder(label=what)
        if nbytes:
            enc.copy_buffer_to_buffer(src, offset, staging, 0, size)
        gdev.queue.submit([enc.finish()])
    return staging


def unstage(gdev: Any, staging: Any, nbytes: int, what: str) -> np.ndarray:
    """The bytes of a mapped staging buffer as a new uint8 array; unmaps and destroys it."""
    with gdev.guard(what):
        try:
            return np.frombuffer(staging.read_mapped(0, staging.size, copy=True), np.uint8)[:nbytes].copy()
        finally:
            staging.unmap()
            staging.destroy()


class GpuTensor:
    """A graph output in GPU memory, from ``Interpreter.get_output_gpu``.

    Validity: the handle is valid until the interpreter's next ``invoke()``,
    ``allocate_tensors()`` after a resize, ``resize_tensor_input()``, ``recover()`` or ``close()``. After
    that the same byte range holds other data (the next invoke's output) or has been freed,
    so :attr:`buffer`, :meth:`copy`, :meth:`data` and :meth:`data_sync` raise
    :class:`~gpulite.errors.StaleTensorError` (or ``DeviceLostError`` once the device is
    lost). Work the caller encodes on the same device's queue is ordered after the invoke
    that made this output, so it reads the finished values. To keep a value across invokes,
    take :meth:`copy`.

    Attributes
    ----------
    index : int
        The tensor index (as in ``get_output_details()``).
    name : str
    offset : int
        Byte offset of element 0 in :attr:`buffer`; a multiple of 256, so it can be bound at this
        offset on any device (WebGPU caps min-storage-buffer-offset-alignment at 256).
    nbytes : int
        Bytes of the tensor's data (the range holds whole 4-byte words from ``offset``).
    shape : tuple of int
    dtype : numpy.dtype
    layout : str
        ``"NHWC"``: dense, row-major, the TFLite order.
    """

    def __init__(self, *, owner: Any, epoch: int, index: int, name: str, buffer: Any, offset: int,
                 nbytes: int, shape: tuple[int, ...], dtype: np.dtype, layout: str) -> None:
        self._owner = weakref.ref(owner)  # the executable; a handle must not keep an arena alive
        self._epoch, self._buffer = epoch, buffer
        self.index, self.name, self.offset, self.nbytes = index, name, offset, nbytes
        self.shape, self.dtype, self.layout = tuple(shape), np.dtype(dtype), layout

    def __repr__(self) -> str:
        state = "valid" if self.valid else "stale"
        return (f"GpuTensor(index={self.index}, name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"offset={self.offset}, nbytes={self.nbytes}, layout={self.layout!r}, {state})")

    @property
    def valid(self) -> bool:
        """Whether the range still holds this output (see the class docstring)."""
        exe = self._owner()
        return exe is not None and not exe.closed and exe.epoch == self._epoch and exe.gdev.lost is None

    def _check(self, what: str) -> Any:
        exe = self._owner()
        if exe is not None and not exe.closed:
            exe.gdev.check_alive(what)
        if exe is None or exe.closed or exe.epoch != self._epoch:
            why = "its interpreter was closed or reallocated" if exe is None or exe.closed else (
                f"the interpreter has run {exe.epoch - self._epoch} more invoke(s) since")
            raise StaleTensorError(
                f"GpuTensor of tensor {self.index} ({self.name!r}) is no longer valid for {what}: {why}; "
                "call get_output_gpu() again after each invoke, or copy() to keep a value")
        return exe

    @property
    def buffer(self) -> Any:
        """The ``wgpu.GPUBuffer`` (the interpreter's arena, owned by the interpreter: never destroy it)."""
        self._check("buffer")
        return self._buffer

    @property
    def device(self) -> Any:
        """The ``wgpu.GPUDevice`` the buffer belongs to."""
        return self._buffer._device

    def copy(self, *, usage: int = _COPY_USAGE, label: str = "") -> Any:
        """A new ``wgpu.GPUBuffer`` holding this tensor's bytes; the caller owns it.

        The copy is recorded and submitted now, on the GPU (no readback); the buffer is
        ``nbytes`` rounded up to 4 bytes, starts at offset 0 and stays valid until the caller
        destroys it or drops it. ``usage`` must include ``COPY_DST``.
        """
        exe = self._check("copy()")
        if not usage & wgpu.BufferUsage.COPY_DST:
            raise ValueError(f"copy() needs a usage that includes COPY_DST, got {usage!r}")
        size = max(_padded(self.nbytes), 4)
        with exe.gdev.guard("GpuTensor.copy"):
            out = exe.gdev.device.create_buffer(label=label or f"gpulite.copy.{self.name}", size=size, usage=usage)
            enc = exe.gdev.device.create_command_encoder(label="gpulite.copy")
            if self.nbytes:
                enc.copy_buffer_to_buffer(self._buffer, self.offset, out, 0, size)
            exe.gdev.queue.submit([enc.finish()])
        return out

    def _finish(self, exe: Any, raw: np.ndarray) -> np.ndarray:
        exe.bytes_read_back += self.nbytes
        return raw.view(self.dtype).reshape(self.shape)

    def data_sync(self) -> np.ndarray:
        """Read the tensor back, blocking until the GPU is done; a new numpy array."""
        exe = self._check("data_sync()")
        staging = stage(exe.gdev, self._buffer, self.offset, self.nbytes, "GpuTensor.data_sync")
        with exe.gdev.guard("GpuTensor.data_sync"):
            staging.map_sync(wgpu.MapMode.READ)
        return self._finish(exe, unstage(exe.gdev, staging, self.nbytes, "GpuTensor.data_sync"))

    async def data(self) -> np.ndarray:
        """Read the tensor back without blocking the event loop; a new numpy array.

        Awaits wgpu's asynchronous buffer map (asyncio or trio), so other tasks run while the
        GPU finishes. The range is snapshotted when this is called, not when it completes.
        """
        exe = self._check("data()")
        gdev = exe.gdev
        staging = stage(gdev, self._buffer, self.offset, self.nbytes, "GpuTensor.data")
        with gdev.guard("GpuTensor.data"):
            await staging.map_async(wgpu.MapMode.READ)
        return self._finish(exe, unstage(gdev, staging, self.nbytes, "GpuTensor.data"))
