"""Encoding and submitting a GPU partition's invoke in two calls, at well under 1 us a dispatch.

Through wgpu-py's methods an invoke costs three Python calls per dispatch, each with its
argument checks and error capture (5-7 us per dispatch: 0.5-0.9 ms for pose_landmark_full),
plus the wrappers of the encoder, the pass, the command buffer and the submit. Everything an
invoke needs is made at allocate time, so a :class:`Recording` keeps the raw handles
(wgpu-py's cffi pointers, as addresses) of the device, the queue, every dispatch's pipeline
and bind group, and the copies into staging behind the pass, and :meth:`Recording.submit`
makes the whole invoke (encoder created, copies of bound inputs, pass begun, dispatches, pass
ended, copies into staging, finished; then submitted; everything it created released) with:

- ``"native"`` (default): ``encode.c``'s ``encode`` and ``submit``, compiled on first use by
  :func:`gpulite.native.build` and called through ctypes, which call wgpu-native's C API
  through the function pointers of wgpu-py's cffi library;
- ``"python"``: the same calls from Python through wgpu-py's cffi library, skipping wgpu-py's
  wrappers (the fallback when no C compiler is found, or ``webgpu_encode=python``).

Both make the same calls in the same order (a pipeline equal to the previous dispatch's is
not set again), so the command buffers are the same. Errors are as through wgpu-py:
wgpu-native reports them to the error callback wgpu-py gave the device, and both steps run
inside wgpu-py's error capture, so an error raises its ``wgpu.GPUError`` subclass. An
encoding error (wgpu-native reports those at finish) stops the invoke before the submit:
wgpu-native aborts the process when an invalid command buffer is submitted. The objects a
recording uses (pipelines, bind groups, buffers) are wgpu-py's, kept alive here; the
executable owns them for as long as a recording can be used and refuses to run once closed.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import ffi, lib
from wgpu.backends.wgpu_native._api import error_handler
from wgpu.backends.wgpu_native._helpers import ERROR_TYPES

from gpulite import native
from gpulite.environment import env

log = logging.getLogger(__name__)
SOURCE = Path(__file__).with_name("encode.c")
FLAGS = ["-O2", "-shared", "-fPIC"]
MODES = ("native", "python")
# In the order of encode.c's enum.
FUNCTIONS = ("wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderCopyBufferToBuffer",
             "wgpuCommandEncoderBeginComputePass", "wgpuComputePassEncoderSetPipeline",
             "wgpuComputePassEncoderSetBindGroup", "wgpuComputePassEncoderDispatchWorkgroups",
             "wgpuComputePassEncoderEnd", "wgpuCommandEncoderFinish", "wgpuQueueSubmit",
             "wgpuComputePassEncoderRelease", "wgpuCommandEncoderRelease", "wgpuCommandBufferRelease")
_CAPTURE = "gpulite.encode"  # the name wgpu-py's error capture files the call under
_lock = threading.Lock()
_native: ctypes.CDLL | bool | None = None  # None: not tried yet; False: unavailable
_why = ""
_fns: np.ndarray | None = None

Copy = tuple[Any, int, Any, int, int]  # source buffer, offset, destination buffer, offset, bytes


def address(cdata: Any) -> int:
    """The address a cffi pointer holds."""
    return int(ffi.cast("uintptr_t", cdata))


def _load(path: Path) -> ctypes.CDLL:
    dll = ctypes.CDLL(str(path))
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    dll.encode.argtypes = [vp, vp, vp, vp, vp, i64, i64, vp, vp, vp, vp, i64]
    dll.encode.restype = vp
    dll.submit.argtypes = [vp, vp, vp]
    dll.submit.restype = None
    return dll


def _library() -> ctypes.CDLL | None:
    global _native, _why
    if _native is None:
        with _lock:
            if _native is None:
                try:
                    _native = native.build(SOURCE, FLAGS, "webgpu-encode", _load,
                                           what="WebGPU backend: cached native encoder", cache_name="native-encoder")
                except (OSError, ValueError) as e:
                    log.warning("WebGPU backend: native encoder unavailable, encoding invokes from Python (%s)", e)
                    _native, _why = False, str(e)
    return _native or None


def mode() -> str:
    """The encoder in use: the ``webgpu_encode`` flag's, ``"python"`` when the native one cannot be built."""
    wanted = env().get("webgpu_encode")
    return "native" if wanted == "native" and _library() is not None else "python"


def status() -> str:
    """One line for ``gpulite info``: which encoder records dispatches and, if not the native one, why."""
    if env().get("webgpu_encode") == "python":
        return "python (flag webgpu_encode is 'python')"
    return "native (encode.c)" if _library() is not None else f"python: native encoder unavailable ({_why})"


def _functions() -> np.ndarray:
    global _fns
    if _fns is None:
        _fns = np.array([address(ffi.addressof(lib, f)) for f in FUNCTIONS], np.uintp)
    return _fns


def _copies(copies: Sequence[Copy]) -> np.ndarray:
    """Copies as encode.c's ``copy_t`` rows: source, offset, destination, offset, bytes."""
    rows = [(address(s._internal), so, address(d._internal), do, n) for s, so, d, do, n in copies]
    return np.array(rows, np.uint64).reshape(-1, 5)


def _raw_copies(copies: Sequence[Copy]) -> list[tuple[Any, int, Any, int, int]]:
    return [(s._internal, int(so), d._internal, int(do), int(n)) for s, so, d, do, n in copies]


def _descriptor(kind: str, label: Any) -> Any:
    """A ``WGPU<kind>Descriptor`` labelled ``label`` (a cffi ``char[]``, kept alive by the caller)."""
    desc = ffi.new(f"WGPU{kind}Descriptor *")
    desc.label.data, desc.label.length = label, len(label) - 1  # without the terminating NUL
    return desc


def _captured(call: Any, *args: Any) -> tuple[Any, tuple[str, str] | None]:
    """``call(*args)`` inside wgpu-py's error capture: its result and the last error reported."""
    error_handler.capture(_CAPTURE)
    try:
        result = call(*args)
    finally:
        error = error_handler.release(_CAPTURE)
    return result, error


def _raise(error: tuple[str, str]) -> None:
    kind, message = error
    raise ERROR_TYPES.get(kind, wgpu.GPUError)(message)


class Recording:
    """A GPU partition's invoke, ready to encode and submit with one call.

    ``dispatches`` are ``(pipeline, bind_group, (x, y, z))`` of wgpu-py objects; ``after``
    the copies recorded behind the pass (``(src, offset, dst, offset, bytes)`` of wgpu-py
    buffers, e.g. readbacks into staging); all kept alive here. ``device`` is a wgpu-py
    device and ``queue`` its queue; ``label`` names the encoder and command buffer in
    wgpu-native's messages; ``how`` is ``"native"`` or ``"python"`` (default :func:`mode`).
    """

    def __init__(self, device: Any, queue: Any, dispatches: Sequence[tuple[Any, Any, tuple[int, int, int]]],
                 how: str | None = None, *, after: Sequence[Copy] = (), label: str = "gpulite") -> None:
        how = how or mode()
        if how not in MODES:
            raise ValueError(f"encoder {how!r}: expected one of {MODES}")
        if how == "native" and _library() is None:
            raise RuntimeError(f"the native encoder is unavailable: {_why}")
        self.how, self.keep = how, (device, queue, list(dispatches), list(after))
        self._device, self._queue = device._internal, queue._internal
        self.raw = [(p._internal, bg._internal, tuple(int(v) for v in g)) for p, bg, g in dispatches]
        self._after = _raw_copies(after)
        self._label = ffi.new("char[]", label.encode())
        self._encoder_desc = _descriptor("CommandEncoder", self._label)
        self._buffer_desc = _descriptor("CommandBuffer", self._label)
        self._submitted = ffi.new("WGPUCommandBuffer[1]")
        if how == "native":
            self._pipelines = np.array([address(p) for p, _, _ in self.raw], np.uintp)
            self._groups = np.array([address(bg) for _, bg, _ in self.raw], np.uintp)
            self._grids = np.array([g for _, _, g in self.raw], np.uint32).reshape(-1, 3)
            self._after_rows = _copies(after)
            fns = _functions().ctypes.data
            self._head = (fns, address(self._device), address(self._encoder_desc), address(self._buffer_desc))
            self._tail = (len(self.raw), self._pipelines.ctypes.data, self._groups.ctypes.data,
                          self._grids.ctypes.data, self._after_rows.ctypes.data, len(self._after_rows))
            self._queue_args = (fns, address(self._queue))

    def __len__(self) -> int:
        return len(self.raw)

    def submit(self, before: Sequence[Copy] = ()) -> None:
        """Encode and submit the invoke, the copies ``before`` (wgpu-py buffers) in front of the
        pass; raise the ``wgpu.GPUError`` wgpu-native reports, if any (an encoding error before
        anything is submitted)."""
        native = self.how == "native"
        if native:
            rows = _copies(before) if before else None
            buffer, error = _captured(_native.encode, *self._head,  # type: ignore[union-attr]
                                      None if rows is None else rows.ctypes.data, len(before), *self._tail)
        else:
            buffer, error = _captured(self._encode_python, _raw_copies(before))
        if error is not None:
            lib.wgpuCommandBufferRelease(ffi.cast("WGPUCommandBuffer", buffer) if native else buffer)
            _raise(error)
        _, error = _captured(_native.submit if native else self._submit_python,  # type: ignore[union-attr]
                             *self._queue_args if native else (), buffer)
        if error is not None:
            _raise(error)

    def _encode_python(self, before: list[tuple[Any, int, Any, int, int]]) -> Any:
        copy = lib.wgpuCommandEncoderCopyBufferToBuffer
        enc = lib.wgpuDeviceCreateCommandEncoder(self._device, self._encoder_desc)
        for c in before:
            copy(enc, *c)
        if self.raw:
            cp = lib.wgpuCommandEncoderBeginComputePass(enc, ffi.NULL)
            set_pipeline, set_group, dispatch = (lib.wgpuComputePassEncoderSetPipeline,
                                                 lib.wgpuComputePassEncoderSetBindGroup,
                                                 lib.wgpuComputePassEncoderDispatchWorkgroups)
            null, last = ffi.NULL, None
            for p, bg, (x, y, z) in self.raw:
                if p != last:
                    set_pipeline(cp, p)
                    last = p
                set_group(cp, 0, bg, 0, null)
                dispatch(cp, x, y, z)
            lib.wgpuComputePassEncoderEnd(cp)
            lib.wgpuComputePassEncoderRelease(cp)
        for c in self._after:
            copy(enc, *c)
        buffer = lib.wgpuCommandEncoderFinish(enc, self._buffer_desc)
        lib.wgpuCommandEncoderRelease(enc)
        return buffer

    def _submit_python(self, buffer: Any) -> None:
        self._submitted[0] = buffer
        lib.wgpuQueueSubmit(self._queue, 1, self._submitted)
        lib.wgpuCommandBufferRelease(buffer)
