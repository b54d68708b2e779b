"""Small C libraries compiled on first use into a per-user cache, verified before loading.

Used by the CPU backend's compiled loops (``backends/cpu/loops.c``, :mod:`.backends.cpu.jit`)
and the WebGPU backend's native encoder (``backends/webgpu/encode.c``). The compiler is
``GPULITE_CC`` (a path or a name on PATH; no other variable is read), else ``cc``, ``gcc`` or
``clang``. A library goes to ``GPULITE_CACHE_DIR`` (else ``~/.cache/gpulite``) under a
subdirectory of its own, named by a digest of its source, flags, compiler and machine. A
cached library is loaded only if it and its directory belong to the user and are writable
by no one else, and it matches the SHA-256 digest its builder wrote beside it; otherwise (or
if loading fails) it is rebuilt. Each file is written by an atomic rename, so processes
building at once never load half a library.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gpulite.environment import cache_dir

log = logging.getLogger("gpulite.native")
T = TypeVar("T")


def compiler() -> str:
    """The C compiler: ``$GPULITE_CC`` (a path or a name on PATH) if set, else ``cc``, ``gcc`` or ``clang``."""
    name = os.environ.get("GPULITE_CC")
    if name:
        found = shutil.which(name)
        if not found:
            raise OSError(f"GPULITE_CC={name!r} is not an executable (expected a compiler path or a name on PATH)")
        return found
    found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not found:
        raise OSError("no C compiler found (set GPULITE_CC or install one, e.g. apt-get install gcc)")
    return found


def cache_entry(source: Path, flags: list[str], cc: str, subdir: str, extra: bytes = b"") -> Path:
    """Where the library built from ``source`` by ``cc`` is cached (its digest beside it, plus ``.sha256``)."""
    key = hashlib.sha256(b"\0".join([source.read_bytes(), " ".join(flags).encode(), cc.encode(),
                                     platform.machine().encode(), extra, sys.platform.encode()])).hexdigest()[:16]
    return cache_dir(subdir) / f"{source.stem}-{key}.so"


def untrusted(path: Path, *, directory: bool) -> str | None:
    """Why ``path`` must not be trusted (not ours, writable by others, not a plain file/dir), or None."""
    st = os.lstat(path)
    if not (stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)):
        return f"{path} is not a {'directory' if directory else 'regular file'}"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _digest_path(lib: Path) -> Path:
    return lib.with_name(lib.name + ".sha256")


def _verified(lib: Path, what: str) -> bool:
    """Whether the cached ``lib`` is ours, private, and has the digest its builder wrote beside it."""
    digest = _digest_path(lib)
    if not lib.exists() and not digest.exists():
        return False
    if not digest.exists():  # e.g. built by a gpulite that wrote no digests
        log.info("%s %s have no digest beside them, rebuilding", what, lib)
        return False
    for path in (lib, digest):
        problem = untrusted(path, directory=False) if path.exists() else f"{path} is missing"
        if problem:
            log.warning("%s not used, rebuilding (%s)", what, problem)
            return False
    if hashlib.sha256(lib.read_bytes()).hexdigest() != digest.read_text(encoding="ascii", errors="replace").strip():
        log.warning("%s %s do not match their digest, rebuilding", what, lib)
        return False
    return True


def _compile(cc: str, source: Path, flags: list[str], lib: Path) -> None:
    """Build ``source`` into ``lib`` and write its digest beside it, each by an atomic rename."""
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=lib.parent)
    os.close(fd)
    fd, tmp_digest = tempfile.mkstemp(suffix=".sha256", dir=lib.parent)
    os.close(fd)
    try:
        done = subprocess.run([cc, *flags, "-o", tmp, str(source)], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise OSError(f"{cc} failed ({done.returncode}): {done.stderr.strip()[:500]}")
        os.chmod(tmp, 0o755)  # whatever the umask: never group/world-writable
        Path(tmp_digest).write_text(hashlib.sha256(Path(tmp).read_bytes()).hexdigest() + "\n", encoding="ascii")
        # Atomic: another process sees a whole library or none; a library without its
        # digest yet (or with the previous one) fails verification and is rebuilt.
        os.replace(tmp, lib)
        os.replace(tmp_digest, _digest_path(lib))
    finally:
        for path in (tmp, tmp_digest):
            if os.path.exists(path):
                os.unlink(path)


def build(source: Path, flags: list[str], subdir: str, load: Callable[[Path], T], *, what: str,
          cache_name: str, extra: bytes = b"") -> T:
    """``load`` of the cached build of ``source`` if it verifies, else of a fresh one; ``OSError``
    when there is no compiler or the build fails.

    ``what`` names the library in log messages (e.g. "CPU backend: cached compiled loops"),
    ``cache_name`` the cache in the warning when the directory is not private. A cache
    directory that is not this user's or is writable by others is not used: the library is
    then built into a private temporary directory for this process only.
    """
    cc = compiler()
    lib = cache_entry(source, flags, cc, subdir, extra)
    lib.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    problem = untrusted(lib.parent, directory=True)
    if problem:
        log.warning("%s: not using the %s cache (%s; `chmod go-w` it if it is yours); building in a private "
                    "directory", what.split(":")[0], cache_name, problem)
        private = Path(tempfile.mkdtemp(prefix=f"gpulite-{source.stem}-"))
        try:
            _compile(cc, source, flags, private / lib.name)
            return load(private / lib.name)  # the mapping outlives the file
        finally:
            shutil.rmtree(private, ignore_errors=True)
    if _verified(lib, what):
        try:
            return load(lib)
        except OSError as e:
            log.warning("%s failed to load, rebuilding (%s)", what, e)
    _compile(cc, source, flags, lib)
    return load(lib)
