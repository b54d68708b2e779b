"""Recording a GPU partition's dispatches into a compute pass, at well under 1 us each.

Recording through wgpu-py's methods costs three Python calls per dispatch, each with its
argument checks and error capture (6-7 us per dispatch measured: 0.7 ms for
pose_landmark_full's dispatches, in front of the GPU on every invoke). Everything a dispatch
needs is made at allocate time, so a :class:`Recording` keeps the raw handles (wgpu-py's
cffi pointers, as addresses) and records them with:

- ``"native"`` (default): one call of ``encode.c``'s ``record``, compiled on first use by
  :func:`gpulite.native.build` and called through ctypes, which calls wgpu-native's
  ``wgpuComputePassEncoderSetPipeline`` / ``SetBindGroup`` / ``DispatchWorkgroups`` through
  the function pointers of wgpu-py's cffi library;
- ``"python"``: the same calls from a Python loop over wgpu-py's cffi library, skipping
  wgpu-py's wrappers (the fallback when no C compiler is found, or ``webgpu_encode=python``).

Both make the same calls in the same order (a pipeline equal to the previous dispatch's is
not set again), so the command buffers are the same. Errors are as before: wgpu-native
reports an encoder's validation errors when the pass ends or the encoder finishes, which go
through wgpu-py (and raise). The executable owns the pipelines and bind groups for as long
as a recording can be used, and refuses to run once closed.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np
from wgpu.backends.wgpu_native import ffi, lib

from gpulite import native
from gpulite.environment import env

log = logging.getLogger(__name__)
SOURCE = Path(__file__).with_name("encode.c")
FLAGS = ["-O2", "-shared", "-fPIC"]
MODES = ("native", "python")
_FUNCTIONS = ("wgpuComputePassEncoderSetPipeline", "wgpuComputePassEncoderSetBindGroup",
              "wgpuComputePassEncoderDispatchWorkgroups")
_lock = threading.Lock()
_native: ctypes.CDLL | bool | None = None  # None: not tried yet; False: unavailable
_why = ""


def address(cdata: Any) -> int:
    """The address a cffi pointer holds."""
    return int(ffi.cast("uintptr_t", cdata))


def _load(path: Path) -> ctypes.CDLL:
    dll = ctypes.CDLL(str(path))
    dll.record.restype = None
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
                    log.warning("WebGPU backend: native encoder unavailable, recording dispatches from Python (%s)", e)
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


class Recording:
    """A GPU partition's dispatches, ready to record into a compute pass.

    ``dispatches`` are ``(pipeline, bind_group, (x, y, z))`` of wgpu-py objects, kept alive
    here; ``how`` is ``"native"`` or ``"python"`` (default :func:`mode`).
    """

    def __init__(self, dispatches: list[tuple[Any, Any, tuple[int, int, int]]], how: str | None = None) -> None:
        how = how or mode()
        if how not in MODES:
            raise ValueError(f"encoder {how!r}: expected one of {MODES}")
        if how == "native" and _library() is None:
            raise RuntimeError(f"the native encoder is unavailable: {_why}")
        self.how, self.keep = how, list(dispatches)
        self.raw = [(p._internal, bg._internal, tuple(int(v) for v in g)) for p, bg, g in dispatches]
        self._fns = np.array([address(ffi.addressof(lib, f)) for f in _FUNCTIONS], np.uintp)
        self._pipelines = np.array([address(p) for p, _, _ in self.raw], np.uintp)
        self._groups = np.array([address(bg) for _, bg, _ in self.raw], np.uintp)
        self._grids = np.array([g for _, _, g in self.raw], np.uint32).reshape(-1, 3)
        self._args = (ctypes.c_void_p(self._fns.ctypes.data), ctypes.c_int64(len(self.raw)),
                      ctypes.c_void_p(self._pipelines.ctypes.data), ctypes.c_void_p(self._groups.ctypes.data),
                      ctypes.c_void_p(self._grids.ctypes.data))

    def __len__(self) -> int:
        return len(self.raw)

    def record(self, compute_pass: Any) -> None:
        """Record every dispatch into ``compute_pass`` (a wgpu-py ``GPUComputePassEncoder``)."""
        if not self.raw:
            return
        cp = compute_pass._internal
        if self.how == "native":
            _native.record(ctypes.c_void_p(address(cp)), *self._args)  # type: ignore[union-attr]
            return
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
