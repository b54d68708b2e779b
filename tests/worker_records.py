"""What the fuzz tests' worker subprocesses share: reading their JSON-lines progress, and
bounding each case's work by its call count (:class:`WorkBudget`) rather than its seconds."""

from __future__ import annotations

import cProfile
import json
import os
import selectors
import subprocess
import time
from collections.abc import Callable, Iterator


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


def call_count(fn: Callable[[], object]) -> int:
    """Function calls (Python and C builtins, cProfile's count) made by ``fn()``, whatever it raises.

    The measure of a fuzz case's work: the same on a loaded machine as on an idle one.
    """
    prof = cProfile.Profile(builtins=True)
    prof.enable()
    try:
        fn()
    except BaseException:  # the case's outcome is judged elsewhere; only its work counts here
        pass
    finally:
        prof.disable()
    return sum(s.callcount for s in prof.getstats())


class WorkBudget:
    """The work a mutated case may do: at most ``FACTOR`` times the calls of the unmutated model's
    case, plus ``SLACK`` (a mutated file may take a path that imports a module or fills a cache).

    Counting triples a case's time, so :meth:`calls` counts a case only when it took over
    ``RECOUNT`` times the unmutated case's seconds measured now, on this machine: a case over
    the bound does ``FACTOR`` times the calls, takes about that many times as long, and is
    always counted; a loaded machine only makes more cases counted. The verdict is the count,
    never the seconds (time limits belong in benchmarks). Work inside numpy (a large array
    from a corrupted shape) is not calls; the worker's address-space limit bounds it instead.
    """

    FACTOR = 20
    SLACK = 200_000
    RECOUNT = 4.0

    def __init__(self, clean: Callable[[], object]) -> None:
        clean()  # imports and caches filled before anything is measured
        t0 = time.perf_counter()
        clean()
        self.clean_seconds = time.perf_counter() - t0
        self.clean_calls = call_count(clean)
        self.limit = self.FACTOR * self.clean_calls + self.SLACK

    def calls(self, seconds: float, case: Callable[[], object]) -> int | None:
        """The case's call count when it took long enough to be worth counting (``seconds``), else None."""
        return call_count(case) if seconds > self.RECOUNT * self.clean_seconds else None


def over_budget(results: list[dict]) -> list[str]:
    """The records whose counted calls exceed their limit, described for an assertion message."""
    return [f"case {r['case']} [{r.get('kind')}]: {r['calls']:,} calls > {r['call_limit']:,}"
            for r in results if r.get("calls") is not None and r["calls"] > r["call_limit"]]
