"""Graph inputs, back-pressure waits, stall handling and completion: the user-facing half of a run.

Mixed into :class:`gpulite.pipeline.scheduler.Run`; every method here documents whether it
expects the run's lock held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from gpulite.errors import CalculatorError, GraphStateError, GraphTimeoutError, TimestampError
from gpulite.pipeline.packet import DONE, Packet, check_timestamp
from gpulite.pipeline.streams import NodeState, Stream
from gpulite.pipeline.tracing import NodeStats, Tracer

log = logging.getLogger(__name__)


class RunInputs:
    """State and methods shared with ``Run`` (declared here for type checkers)."""

    lock: threading.RLock
    cond: threading.Condition
    tracer: Tracer | None
    error: BaseException | None
    done: bool
    aborting: bool
    draining: bool
    stopping: bool
    running: int
    waiting: Counter[str]
    inputs_open: set[str]
    streams: dict[str, Stream]
    nodes: list[NodeState]
    threads: list[threading.Thread]
    ready: Any
    dirty: Any
    _push: Callable[[Stream, Packet], None]
    _settle: Callable[[], None]
    _raise_bound: Callable[[Stream, int], None]
    _fail: Callable[[BaseException], None]
    _finish_if_idle: Callable[[], None]
    _set_done: Callable[[], None]
    _help: Callable[[], bool]
    _sleep: Callable[..., None]

    def add_packet(self, stream: str, payload: Any, timestamp: int | None, timeout: float | None) -> None:
        """Push one packet into a graph input (lock not held); waits for room up to ``timeout`` s."""
        try:
            with self.lock:
                if self.error is not None:
                    raise self.error
                if stream not in self.inputs_open:
                    why = "is closed" if stream in self.streams and self.streams[stream].producer is None else \
                        f"is not a graph input stream (inputs: {sorted(self.inputs_open)})"
                    raise GraphStateError(f"add_packet({stream!r}): the stream {why}")
                s = self.streams[stream]
                ts = check_timestamp(max(s.bound, 0) if timestamp is None else timestamp, f"add_packet({stream!r})")
                if ts < s.bound:
                    raise TimestampError(f"add_packet({stream!r}): timestamp {ts} is not after the previous packet "
                                         f"(next allowed: {s.bound}); timestamps must increase on each stream")
                self._wait_room(s, ts, timeout)
                packet = Packet(payload, ts)
                self._push(s, packet)
                self._settle()
                observers = list(s.observers)
            for cb in observers:
                try:
                    cb(packet)
                except Exception as e:
                    err = CalculatorError("(graph input)", "observer", f"observer of {stream!r}", ts, e)
                    err.__cause__ = e
                    with self.lock:
                        self._fail(err)
                    raise err from e
        except CalculatorError:
            self._finish_if_idle()
            raise

    def _wait_room(self, s: Stream, ts: int, timeout: float | None) -> None:
        """Lock held. Wait until no consumer queue of ``s`` is full; raise the run's error if it fails."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if any(q.full() for q in s.consumers):
            self.waiting[s.name] += 1
            try:
                self._check_done()                  # an idle graph cannot drain the queue: may enlarge it
                while self.error is None:
                    full = [q for q in s.consumers if q.full()]
                    if not full:
                        break
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        q = full[0]
                        raise GraphTimeoutError(
                            f"add_packet({s.name!r}, timestamp={ts}) waited {timeout} s: the queue of node "
                            f"{q.node.name!r} input {q.port} stayed full ({len(q.queue)}/{q.limit} packets); the "
                            f"graph is not keeping up or a calculator is stuck")
                    if not self._help():
                        self._sleep(left)
            finally:
                self.waiting[s.name] -= 1
                if not self.waiting[s.name]:
                    del self.waiting[s.name]
        if self.error is not None:
            raise self.error

    def close_inputs(self, names: Iterable[str]) -> None:
        """Lock not held. Move the bounds of graph inputs ``names`` to DONE."""
        with self.lock:
            for name in names:
                if name in self.inputs_open:
                    self.inputs_open.discard(name)
                    self._raise_bound(self.streams[name], DONE)
            self._settle()
            self._check_done()
        self._finish_if_idle()

    def _check_done(self) -> None:
        """Lock held. End the run when every node closed; look for stalls when idle."""
        if self.done or (self.error is not None and not self.draining):
            return
        if not self.inputs_open and all(n.closed for n in self.nodes):
            self._set_done()
        elif self.running == 0 and not self.ready:
            self._check_stall()

    def _check_stall(self) -> None:
        """Lock held, graph idle: if someone waits on a full queue that nothing will drain, enlarge it."""
        if not self.waiting and self.inputs_open:
            return                                   # idle, waiting for the user's next packet
        full = [q for n in self.nodes for q in n.inputs.values() if q.full()
                and ((q.stream.producer is None and self.waiting[q.stream.name])
                     or (q.stream.producer is not None and q.stream.producer.throttled))]
        for q in full:
            q.limit = max(2 * q.limit, len(q.queue) + 1)
            q.node.growths += 1
            log.warning("node %r input %s: queue full (%d packets) while the graph is idle; raising its limit to %d "
                        "to avoid a deadlock", q.node.name, q.port, len(q.queue), q.limit)
            if q.stream.producer is not None:
                self.dirty.append(q.stream.producer)
        if full:
            self.cond.notify_all()
            self._settle()
        elif not self.inputs_open:                   # cannot happen; fail loudly rather than hang
            waiting = {n.name: {q.port: q.next_ts() for q in n.inputs.values()} for n in self.nodes if not n.closed}
            self._fail(GraphStateError(f"pipeline stalled with all inputs closed; open nodes and the next "
                                       f"timestamp of each input: {waiting}"))

    def wait_for(self, names: list[str], timestamp: int, timeout: float | None) -> None:
        """Lock not held. Wait until each stream's bound is past ``timestamp`` and its producer is idle."""
        deadline = None if timeout is None else time.monotonic() + timeout
        streams = [self.streams[n] for n in names]
        with self.lock:
            while True:
                if self.error is not None:
                    raise self.error
                pending = [s.name for s in streams if s.bound <= timestamp
                           or (s.producer is not None and s.producer.running)]
                if not pending:
                    return
                if self.done:
                    raise GraphStateError(f"wait_for({pending}, {timestamp}): the run ended before them")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise GraphTimeoutError(f"wait_for({pending}, {timestamp}): not past timestamp {timestamp} "
                                            f"after {timeout} s")
                if not self._help():
                    self._sleep(0.01 if left is None else min(left, 0.01))

    def wait(self, timeout: float | None) -> None:
        """Lock not held. Block until the run ends; raise its error."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.lock:
                if self.done:
                    break
                if (self.error is not None and self.running == 0 and not self.aborting
                        and not (self.draining and self.ready)):
                    pass                             # nobody else will clean up: do it below
                else:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        busy = [n.name for n in self.nodes if n.running]
                        raise GraphTimeoutError(f"graph not done after {timeout} s; running nodes: {busy}, "
                                                f"open inputs: {sorted(self.inputs_open)}")
                    if not self._help():
                        self._sleep(left)
                    continue
            self._finish_if_idle()
        for t in self.threads:
            if t.is_alive() and t is not threading.current_thread():
                t.join(timeout=1.0)
        if self.error is not None:
            raise self.error

    def busy_seconds(self) -> dict[str, float]:
        """Each node's busy time so far (what ``stats`` reports as ``busy_s``, cheaper per frame)."""
        with self.lock:
            return {n.name: n.busy_s for n in self.nodes}

    def stats(self) -> dict[str, NodeStats]:
        with self.lock:
            return {n.name: NodeStats(n.name, n.spec.cls.__name__, n.processed, n.cc.drops if n.cc else 0, n.busy_s,
                                      max((q.max_depth for q in n.inputs.values()), default=0), n.growths)
                    for n in self.nodes}
