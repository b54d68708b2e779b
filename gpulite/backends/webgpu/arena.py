"""The GPU arena: one storage buffer per memory plan, activations first, then constants.

Layout::

    [0, plan_bytes)                 non-constant tensors at the plan's offsets (as on the CPU)
    [plan_bytes, plan_bytes + ...)  constants and pre-transformed weights, 16-byte aligned

Constants are uploaded once, when the plan is compiled, and stay resident: weights never
change between invokes, and on a discrete GPU re-sending them would cost more than the
whole model's compute. Per invoke only inputs go up and outputs come back.

Keeping both regions in one buffer means every kernel binds exactly one storage buffer, so
one bind-group layout serves every pipeline and offsets are plain word indices in uniforms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import wgpu

from gpulite.errors import GpuliteError

CONST_ALIGN = 16  # bytes: kernels read constants as vec4<f32> through binding 2
REGION_ALIGN = 256


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


@dataclass(frozen=True)
class InvokeCheck:
    """Words kernels write at an invoke that the executable reads back with the outputs;
    ``error(words)`` is the exception the invoke raises (as the CPU kernel would), or None.
    An index check (``kernels/index_check.py``) writes all its words at every invoke; a
    ``sticky`` check's kernels only ever raise its words from 0 (atomics: a table kernel
    flagging input codes outside its op's domain, ``kernels/code_table.py``), and the
    executable zeroes them after an invoke that failed."""

    offset: int  # bytes into the arena
    words: int
    error: Callable[[np.ndarray], Exception | None]
    sticky: bool = False


class GpuArena:
    """Owns the storage buffer of one compiled plan.

    Parameters
    ----------
    plan_bytes : int
        ``MemoryPlan.arena_bytes``: the activation region's size.
    """

    def __init__(self, plan_bytes: int) -> None:
        self.plan_bytes = _align(max(plan_bytes, 4), REGION_ALIGN)
        self.const_bytes = 0
        self._consts: list[tuple[int, np.ndarray, Any]] = []  # (byte offset, data, dedup key)
        self._by_key: dict[Any, int] = {}
        self.checks: list[tuple[int, InvokeCheck]] = []  # (constants before it, check)
        self.buffer: Any = None

    @property
    def total_bytes(self) -> int:
        return self.plan_bytes + self.const_bytes

    def add_constant(self, data: np.ndarray, key: Any = None) -> int:
        """Reserve space for ``data`` and return its byte offset; uploaded by :meth:`realize`.

        ``key`` deduplicates: a graph constant read by several nodes is stored once.
        """
        if key is not None and key in self._by_key:
            return self._by_key[key]
        data = np.ascontiguousarray(data)
        off = self.plan_bytes + self.const_bytes
        self._consts.append((off, data, key))
        if key is not None:
            self._by_key[key] = off
        self.const_bytes += _align(max(data.nbytes, 4), CONST_ALIGN)
        return off

    def add_check(self, words: int, error: Callable[[np.ndarray], Exception | None],
                  sticky: bool = False) -> InvokeCheck:
        """Reserve ``words`` u32 words (zeros at first) kernels write at an invoke and the
        executable reads back after it, raising ``error(words)`` when that is not None
        (``sticky``: see :class:`InvokeCheck`)."""
        check = InvokeCheck(self.add_constant(np.zeros(words, np.uint32)), words, error, sticky)
        self.checks.append((len(self._consts) - 1, check))
        return check

    def checkpoint(self) -> int:
        return len(self._consts)

    def rollback(self, mark: int) -> None:
        """Forget constants added after ``mark`` (a kernel factory declined the node)."""
        for _, _, key in self._consts[mark:]:
            self._by_key.pop(key, None)
        if mark < len(self._consts):
            self.const_bytes = self._consts[mark][0] - self.plan_bytes
        del self._consts[mark:]
        self.checks = [(m, c) for m, c in self.checks if m < mark]

    def realize(self, gdev: Any) -> Any:
        """Create the buffer and upload every constant once; returns the buffer."""
        limit = gdev.limits.get("max-storage-buffer-binding-size", 1 << 27)
        if self.total_bytes > limit:
            raise GpuliteError(
                f"the model needs a {self.total_bytes} byte GPU arena ({self.plan_bytes} activations + "
                f"{self.const_bytes} constants) but {gdev.name} binds at most {limit} bytes per storage buffer")
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.buffer = gdev.device.create_buffer(label="gpulite.arena", size=self.total_bytes, usage=usage)
        for off, data, _ in self._consts:
            raw = data.view(np.uint8).reshape(-1)
            if raw.size % 4:  # write_buffer sizes must be multiples of 4
                raw = np.concatenate([raw, np.zeros(-raw.size % 4, np.uint8)])
            if raw.size:
                gdev.queue.write_buffer(self.buffer, off, raw)
        self._consts = [(off, np.empty(0, np.uint8), None) for off, _, _ in self._consts]  # host copies go
        return self.buffer

    def close(self) -> None:
        """Destroy the buffer (idempotent; a lost device's buffer is simply dropped)."""
        if self.buffer is not None:
            try:
                self.buffer.destroy()
            except Exception:  # a lost device may refuse; dropping the object releases it anyway
                pass
            self.buffer = None
