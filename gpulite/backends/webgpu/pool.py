"""A pool of GPU buffers for eager tensors, keyed by size class, never by shape.

TF.js's WebGPU buffer manager reuses a freed buffer only for a request of exactly the same
byte size, so a stream of slightly different shapes (a resizing camera crop, a growing
sequence) allocates a new buffer each time and the pool grows without bound. Here a request
is rounded up to its *size class*: four classes per power of two (256, 320, 384, 448, 512,
640, ...), so at most 25% of a buffer is slack and every size in a class shares its buffers.
Free buffers beyond ``max_free_bytes`` are destroyed instead of kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import wgpu

log = logging.getLogger(__name__)

MIN_CLASS = 256
USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def size_class(nbytes: int) -> int:
    """The buffer size a request of ``nbytes`` gets: four classes per power of two, >= 256."""
    n = max(int(nbytes), MIN_CLASS)
    top = 1 << (n - 1).bit_length()  # the power of two >= n
    half, step = top >> 1, top >> 3
    return half + -(-(n - half) // step) * step


class BufferPool:
    """GPU buffers of one device, recycled by size class.

    Parameters
    ----------
    device : wgpu.GPUDevice
    max_free_bytes : int
        Free buffers kept for reuse at most; a release beyond it destroys the buffer.
    destroy : callable, optional
        ``destroy(buffer)`` instead of ``buffer.destroy()``: the owner defers it while
        recorded, unsubmitted commands may still use the buffer (submitting a command buffer
        that names a destroyed buffer is a fatal error in wgpu-native; destroying after
        submission is safe).

    Attributes
    ----------
    allocated_bytes : int
        Bytes of every live buffer the pool created (in use and free).
    free_bytes : int
        Bytes of the free buffers waiting for reuse.
    """

    def __init__(self, device: Any, *, max_free_bytes: int = 256 << 20,
                 destroy: Callable[[Any], None] | None = None) -> None:
        self.device, self.max_free_bytes, self._destroy_fn = device, max_free_bytes, destroy
        self._free: dict[int, list[Any]] = {}
        self.allocated_bytes = 0
        self.free_bytes = 0
        self.created = 0
        self.closed = False

    def acquire(self, nbytes: int) -> Any:
        """A buffer of at least ``nbytes`` (its ``size`` is the size class), reused if one is free."""
        size = size_class(nbytes)
        free = self._free.get(size)
        if free:
            self.free_bytes -= size
            return free.pop()
        buf = self.device.create_buffer(label="gpulite.tensor", size=size, usage=USAGE)
        self.allocated_bytes += size
        self.created += 1
        return buf

    def release(self, buf: Any) -> None:
        """Give ``buf`` back: kept for reuse, or destroyed past ``max_free_bytes`` or after :meth:`close`."""
        size = buf.size
        if self.closed or self.free_bytes + size > self.max_free_bytes:
            self._destroy(buf)
            return
        self._free.setdefault(size, []).append(buf)
        self.free_bytes += size

    def _destroy(self, buf: Any) -> None:
        self.allocated_bytes -= buf.size
        if self._destroy_fn is not None:
            self._destroy_fn(buf)
            return
        try:
            buf.destroy()
        except Exception:  # a lost device may refuse; dropping the object releases it anyway
            log.debug("destroying a pooled buffer failed", exc_info=True)

    def trim(self) -> int:
        """Destroy every free buffer; returns the bytes released."""
        released = self.free_bytes
        for bufs in self._free.values():
            for b in bufs:
                self._destroy(b)
        self._free.clear()
        self.free_bytes = 0
        return released

    def close(self) -> None:
        """Destroy the free buffers; buffers still in use are destroyed when released."""
        self.trim()
        self.closed = True
