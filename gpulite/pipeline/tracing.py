"""Per-node statistics and Chrome trace output (``chrome://tracing``, https://ui.perfetto.dev)."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeStats:
    """What one node did in the current (or last) run.

    Attributes
    ----------
    processed : int
        ``process`` calls.
    dropped : int
        Packets the calculator dropped on purpose (``cc.record_drop``; the flow limiter's drops).
    busy_s : float
        Seconds spent inside ``open``/``process``/``close``.
    max_queue_depth : int
        Most packets ever waiting on one of its input ports.
    queue_growths : int
        Times one of its input queues was enlarged to break a back-pressure stall.
    """

    name: str
    calculator: str
    processed: int
    dropped: int
    busy_s: float
    max_queue_depth: int
    queue_growths: int


class Tracer:
    """Collects trace events in memory; :meth:`write` saves Chrome trace JSON.

    Spans (``ph: "X"``) have the node's name and the phase as category (``open``/``process``/
    ``close``) and the input timestamp in ``args``; queue depths are counters (``ph: "C"``)
    named ``queue <node>`` with one series per input port.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._t0 = time.perf_counter()
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._threads: dict[int, str] = {}

    def _us(self, t: float) -> float:
        return round((t - self._t0) * 1e6, 3)

    def span(self, node: str, phase: str, start: float, end: float, timestamp: int | None) -> None:
        th = threading.current_thread()
        ev = {"name": node, "cat": phase, "ph": "X", "ts": self._us(start), "dur": self._us(end) - self._us(start),
              "pid": 0, "tid": th.ident or 0, "args": {"timestamp": timestamp}}
        with self._lock:
            self._threads.setdefault(th.ident or 0, th.name)
            self._events.append(ev)

    def queue_depth(self, node: str, port: str, depth: int) -> None:
        ev = {"name": f"queue {node}", "ph": "C", "ts": self._us(time.perf_counter()), "pid": 0,
              "args": {port: depth}}
        with self._lock:
            self._events.append(ev)

    def write(self) -> None:
        with self._lock:
            meta = [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}}
                    for tid, name in self._threads.items()]
            doc = {"traceEvents": meta + self._events, "displayTimeUnit": "ms"}
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        log.info("wrote pipeline trace %s (%d events)", self.path, len(doc["traceEvents"]))
