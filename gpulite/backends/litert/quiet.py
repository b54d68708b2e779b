"""LiteRT interpreters made without LiteRT's one INFO line on stderr.

The first ``allocate_tensors()`` in a process makes LiteRT's C++ logger write ``INFO: Created
TensorFlow Lite XNNPACK delegate for CPU.`` to file descriptor 2; ai-edge-litert has no option
for it and ``TF_CPP_MIN_LOG_LEVEL`` does not reach that logger. So, until that line has been
seen, fd 2 goes into a temporary file while an interpreter is made and allocated (under a lock:
one at a time), and everything written there comes back to stderr except that exact line: a
warning or error of LiteRT's still shows. Another thread's stderr output in that window is
delayed, not lost.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

XNNPACK_INFO = b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU."

_lock = threading.RLock()
_seen = False  # LiteRT writes the line once a process


def allocated(interpreter_class: Any, **kwargs: Any) -> Any:
    """``interpreter_class(**kwargs)`` (LiteRT's Interpreter) with its tensors allocated, without
    LiteRT's XNNPACK INFO line on stderr; what it raises propagates."""
    with without_xnnpack_info():
        it = interpreter_class(**kwargs)
        it.allocate_tensors()
    return it


@contextmanager
def without_xnnpack_info() -> Iterator[None]:
    """Run the block with fd 2 captured; then write back every captured line but :data:`XNNPACK_INFO`."""
    global _seen
    if _seen:
        yield
        return
    with _lock, tempfile.TemporaryFile() as captured:
        _flush()
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 (a daemon): nothing to keep quiet
            yield
            return
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            _flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().splitlines(keepends=True)
            kept = [line for line in lines if line.rstrip(b"\r\n") != XNNPACK_INFO]
            _seen = _seen or len(kept) < len(lines)
            _write_all(2, b"".join(kept))


def _flush() -> None:
    if sys.stderr is not None:
        sys.stderr.flush()


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
