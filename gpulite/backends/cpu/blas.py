"""Control of numpy's OpenBLAS from the CPU backend: threads per invoke, and its kernel choice.

Threads: ``openblas_set_num_threads_local`` sets how many threads BLAS calls may use and
returns the previous count, so an invoke runs its GEMMs single-threaded (the kernels split
work over their own threads) and puts the setting back afterwards. In OpenBLAS's pthreads
builds, numpy's, the count is process-wide despite the name; OpenBLAS 0.3.34 (numpy 2.5)
exports only the get/set pair, which serves the same way.

GEMMs: :func:`sgemm` finds numpy's CBLAS ``sgemm``, which the compiled loops call directly
(:func:`gpulite.backends.cpu.jit.gemm_task`).

Kernels: OpenBLAS builds with ``DYNAMIC_ARCH`` pick their kernels from the CPU at load time.
OpenBLAS up to 0.3.31 does not know AMD family 1Ah (Zen 5) and gives it its AVX2
("Haswell") kernels although the CPU has AVX-512 (OpenMathLib/OpenBLAS#6029, fixed in
#6033); its AVX-512 ("SkylakeX") SGEMM is 1.5-1.9x faster there on conv-sized matrices.
:func:`fix_core` re-runs OpenBLAS's own core selection with ``OPENBLAS_CORETYPE=SkylakeX``
in that one case: the CPU reports every AVX-512 subset the SkylakeX kernels use, OpenBLAS
chose Haswell or Zen, and the user set neither ``OPENBLAS_CORETYPE`` nor
``GPULITE_OPENBLAS_CORE=keep``. Anything unexpected (another BLAS, missing symbols) leaves
OpenBLAS alone; none of this changes results beyond float rounding.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading
from pathlib import Path

import numpy as np

_lock = threading.Lock()
_lib: ctypes.CDLL | bool | None = False  # False: not looked up yet
_set_local = None
_core_checked = False
_AVX512_FOR_SKYLAKEX = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")


def _candidates() -> list[str]:
    """Shared libraries that may be numpy's OpenBLAS: those in numpy's own wheel directories,
    then those mapped into this process (a conda numpy links a system one). Other packages
    bundle their own (opencv-python ships OpenBLAS 0.3.3), so :func:`_load` checks the version."""
    root = Path(np.__file__).resolve().parent
    found: list[str] = []
    for d in (root.parent / "numpy.libs", root / ".dylibs", root.parent / "scipy_openblas64" / "lib",
              root.parent / "scipy_openblas32" / "lib"):
        found.extend(p for p in sorted(glob.glob(str(d / "*openblas*"))) if p not in found)
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if "openblas" in Path(p).name.lower() and p not in found:
                    found.append(p)
    except OSError:
        pass
    return found


def _numpy_openblas() -> str | None:
    """"OpenBLAS <version>" of the OpenBLAS numpy was built with, from ``np.show_config``; None
    when numpy does not say (another BLAS, an old numpy)."""
    try:
        conf = np.show_config(mode="dicts")["Build Dependencies"]["blas"].get("openblas configuration", "")
    except Exception:  # any failure means: unknown
        return None
    words = str(conf).split()
    return " ".join(words[:2]) if len(words) >= 2 and words[0] == "OpenBLAS" else None


def _string(lib: ctypes.CDLL, what: str) -> str | None:
    """OpenBLAS's ``openblas_get_<what>()`` (``config``, ``corename``) under the names its builds
    export it (scipy-openblas prefixes it, and suffixes ``64_`` in its ILP64 build); None if absent."""
    for name in (f"scipy_openblas_get_{what}64_", f"scipy_openblas_get_{what}", f"openblas_get_{what}"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            return (fn() or b"").decode(errors="replace")
    return None


def _version(lib: ctypes.CDLL) -> str | None:
    """"OpenBLAS <version>" of a loaded OpenBLAS (its ``openblas_get_config``), or None."""
    words = (_string(lib, "config") or "").split()
    return " ".join(words[:2]) if len(words) >= 2 else None


def _load() -> ctypes.CDLL | None:
    """numpy's OpenBLAS: the first candidate whose version is the one numpy reports (any, when
    numpy reports none) and that can set its thread count; None if there is none."""
    global _lib, _set_local
    if _lib is not False:
        return _lib  # type: ignore[return-value]
    with _lock:
        if _lib is not False:
            return _lib  # type: ignore[return-value]
        lib, want = None, _numpy_openblas()
        for path in _candidates():
            try:
                cand = ctypes.CDLL(path)
            except OSError:
                continue
            if want is not None and _version(cand) != want:
                continue  # another package's OpenBLAS
            fn = _thread_setter(cand)
            if fn is not None:
                lib, _set_local = cand, fn
                break
        _lib = lib
        return lib


def _thread_setter(lib: ctypes.CDLL):
    """``openblas_set_num_threads_local`` (int -> previous int), under the names OpenBLAS
    builds export it, else the same made of its get/set pair (OpenBLAS 0.3.34 in numpy 2.5
    exports only those; in a pthreads build the "local" count is process-wide anyway)."""
    for name in ("openblas_set_num_threads_local", "scipy_openblas_set_num_threads_local64_",
                 "scipy_openblas_set_num_threads_local"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
            return fn
    for suffix in ("64_", ""):
        get = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None) or getattr(
            lib, f"openblas_get_num_threads{suffix}", None)
        put = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None) or getattr(
            lib, f"openblas_set_num_threads{suffix}", None)
        if get is not None and put is not None:
            get.argtypes, get.restype = [], ctypes.c_int
            put.argtypes, put.restype = [ctypes.c_int], None

            def set_threads(n: int, get=get, put=put) -> int:
                prev = get()
                if n != prev:
                    put(n)
                return prev
            return set_threads
    return None


def set_local_threads(n: int) -> int | None:
    """Let BLAS calls from this thread use ``n`` threads; the previous count (None: no control)."""
    if _load() is None or _set_local is None:
        return None
    return int(_set_local(int(n)))


def local_thread_setter():
    """The raw ``openblas_set_num_threads_local`` (int -> previous int), or None: for hot paths."""
    _load()
    return _set_local


def sgemm() -> tuple[int, bool] | None:
    """The address of numpy's OpenBLAS CBLAS ``sgemm`` and whether its integers are 64-bit
    (numpy's wheels use the ILP64 build, whose symbols end in ``64_``); None if not found."""
    lib = _load()
    if lib is None:
        return None
    for name in ("scipy_cblas_sgemm64_", "cblas_sgemm64_", "scipy_cblas_sgemm", "cblas_sgemm"):
        fn = getattr(lib, name, None)
        if fn is not None:
            ilp64 = name.endswith("64_") or "USE64BITINT" in (_string(lib, "config") or "")
            return ctypes.cast(fn, ctypes.c_void_p).value, ilp64
    return None


def _corename(lib) -> str | None:
    return _string(lib, "corename")


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (``flags`` on x86, ``Features`` on Arm);
    empty where there is no such file."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def fix_core() -> str | None:
    """Switch OpenBLAS to its AVX-512 kernels where it misdetects an AVX-512 CPU (see the module
    docstring); returns the core name in use afterwards (None when there is no OpenBLAS)."""
    global _core_checked
    lib = _load()
    if lib is None:
        return None
    with _lock:
        name = _corename(lib)
        if _core_checked or name is None:
            return name
        _core_checked = True
        if (not sys.platform.startswith("linux") or os.environ.get("OPENBLAS_CORETYPE")
                or os.environ.get("GPULITE_OPENBLAS_CORE", "").lower() == "keep"
                or name.lower() not in ("haswell", "zen")
                or not set(_AVX512_FOR_SKYLAKEX) <= cpu_flags()):
            return name
        try:
            quit_, init = lib.gotoblas_dynamic_quit, lib.gotoblas_dynamic_init
            ctypes.c_void_p.in_dll(lib, "gotoblas_SKYLAKEX")  # the build has the SkylakeX kernels
        except (AttributeError, ValueError):
            return name
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"  # read by gotoblas_dynamic_init
        try:
            quit_()
            init()
        finally:
            del os.environ["OPENBLAS_CORETYPE"]
        return _corename(lib)
