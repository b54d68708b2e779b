"""Reading a worker subprocess's JSON-lines progress, shared by the fuzz tests."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
from collections.abc import Iterator


class WorkerHungError(Exception):
    """The worker printed nothing for the allowed time; it has been killed."""


def records(proc: subprocess.Popen, hang_seconds: float) -> Iterator[dict]:
    """Each JSON object ``proc`` prints on its stdout, one per line, as it comes, until the
    stream ends; raises :class:`WorkerHungError` (after killing ``proc``) when nothing arrives for
    ``hang_seconds``."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    pending = b""
    try:
        while True:
            if not sel.select(timeout=hang_seconds):
                proc.kill()
                raise WorkerHungError
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield json.loads(line)
    finally:
        sel.close()
