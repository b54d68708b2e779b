"""One run of a graph: worker threads, bounded queues with back-pressure, timestamp bounds, errors.

Locking: one lock (``Run.lock``, with its condition variable ``Run.cond``) guards all run state.
Calculator code and observer callbacks run without it. A node runs one call at a time; its
packets are popped when it is put on the ready list. Back-pressure: a node is not scheduled
while one of its consumers' queues is full, and ``add_packet`` waits while a consumer of its
stream is full. If the whole graph is idle while someone waits on a full queue (a join waiting
for a stream that cannot advance), the full queues are enlarged and a warning is logged, as
MediaPipe does, instead of deadlocking.

Errors: when a calculator fails in ``process``/``close`` (or an observer of its output fails),
the run *drains*: the failed node is closed at once (what it emits is discarded) and its
outputs end, the graph inputs are closed, and every other node goes on with the packets
already in flight and closes as at a normal end, so sinks see every packet produced before the
failure (a video writer keeps every frame) before they close. The first error is then raised
by ``Graph.close``/``wait_until_done``. A failure with no node to blame (``open``, a scheduler
error, a stall) aborts instead: queued steps are dropped and the open calculators closed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from gpulite.errors import CalculatorError
from gpulite.pipeline.context import CalculatorContext
from gpulite.pipeline.packet import DONE, Packet
from gpulite.pipeline.propagation import Propagation
from gpulite.pipeline.run_inputs import RunInputs
from gpulite.pipeline.streams import InputQueue, NodeState, Step, Stream
from gpulite.pipeline.tracing import Tracer
from gpulite.pipeline.validate import Plan

log = logging.getLogger(__name__)


class Run(RunInputs, Propagation):
    """Executes a checked :class:`Plan` once. Made by ``Graph.start``."""

    def __init__(self, plan: Plan, observers: dict[str, list[Callable[[Packet], Any]]], tracer: Tracer | None) -> None:
        self.lock = threading.RLock()             # (``with self.lock``: the C lock, cheaper than the Condition's)
        self.cond = threading.Condition(self.lock)
        self.tracer = tracer
        self.error: BaseException | None = None
        self.done = self.aborting = self.stopping = self.draining = False
        self.running = 0
        self.sleepers = 0                        # threads in cond.wait (see _sleep)
        self.ready: deque[NodeState] = deque()
        self.dirty: deque[NodeState] = deque()
        self.waiting: Counter[str] = Counter()
        self.inputs_open = set(plan.input_streams)
        self.streams: dict[str, Stream] = {s: Stream(s, None) for s in plan.input_streams}
        self.nodes = [NodeState(spec, spec.cls()) for spec in plan.nodes]
        for node in self.nodes:
            for port, s in node.spec.outputs.items():
                node.outputs[port] = self.streams[s] = Stream(s, node)
        for node in self.nodes:
            for port, s in node.spec.inputs.items():
                q = InputQueue(node, port, self.streams[s], port in node.spec.back_edges, plan.max_queue_size)
                node.inputs[port] = q
                self.streams[s].consumers.append(q)
            node.cc = self._context(node)
        for s, cbs in observers.items():
            self.streams[s].observers.extend(cbs)
        default = min(8, max(2, os.cpu_count() or 2))
        n = max(1, min(default, len(self.nodes))) if plan.num_threads is None else plan.num_threads
        # num_threads 0: no workers; the threads waiting on the run (add_packet on a full queue,
        # wait_for, close) run the ready steps themselves (_help), with the same bookkeeping
        self.inline = n == 0
        self.threads_started = False
        self.threads = [threading.Thread(target=self._worker, name=f"gpulite-pipeline-{i}", daemon=True)
                        for i in range(n)]

    def _context(self, node: NodeState) -> CalculatorContext:
        decl = node.spec.cls.outputs
        streams: dict[str, Stream | None] = dict.fromkeys(decl)
        streams.update(node.outputs)
        return CalculatorContext(node_name=node.name, options=node.spec.options, side_inputs=node.spec.side_inputs,
                                 input_ports=list(node.inputs), output_types=decl, output_streams=streams,
                                 input_bound=lambda port: node.inputs[port].next_ts())

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Open every calculator (in this thread, in topological order), then start the workers."""
        for node in self.nodes:
            assert node.cc is not None
            node.cc.begin(None, {})
            err = self._call(node, "open", None)
            if err is not None:
                with self.lock:
                    self._fail(err)
                self._finish_if_idle()
                raise err
            node.opened = True
            with self.lock:
                calls = self._deliver(node)
            err = _notify(calls, node)
            if err is not None:
                with self.lock:
                    self._fail(err)
                self._finish_if_idle()
                raise err
        for t in self.threads:
            t.start()
        self.threads_started = True
        with self.lock:
            self.dirty.extend(self.nodes)
            self._settle()
            self._check_done()

    def _call(self, node: NodeState, phase: str, ts: int | None) -> CalculatorError | None:
        cc = node.cc
        assert cc is not None
        t0 = time.perf_counter()
        try:
            getattr(node.calc, phase)(cc)
        except BaseException as e:      # even SystemExit: a dead worker would hang the graph
            err = CalculatorError(node.name, node.spec.cls.__name__, phase, ts, e)
            err.__cause__ = e
            return err
        finally:
            t1 = time.perf_counter()
            node.busy_s += t1 - t0
            if self.tracer is not None:
                self.tracer.span(node.name, phase, t0, t1, ts)
        return None

    def _sleep(self, timeout: float | None = None) -> None:
        """Lock held. ``cond.wait``, counted in ``sleepers`` (the hot paths notify only when someone sleeps)."""
        self.sleepers += 1
        try:
            self.cond.wait(timeout)
        finally:
            self.sleepers -= 1

    def _worker(self) -> None:
        while True:
            with self.lock:
                while not self.ready and not self.stopping:
                    self._sleep()
                if self.stopping:
                    return
                node, step = self._pop_ready()
            self._execute(node, step)

    def _help(self) -> bool:
        """Lock held once. In an inline run, run the next ready step on this thread (the lock
        released meanwhile); False when there is none to run."""
        if not self.inline or not self.ready or self.stopping:
            return False
        node, step = self._pop_ready()
        self.cond.release()
        try:
            self._execute(node, step)
        finally:
            self.cond.acquire()
        return True

    def _pop_ready(self) -> tuple[NodeState, Step]:
        """Lock held. Take the next ready node and its step, and mark the node running.

        Which one: the first whose calculator never waits for the GPU (``queues_only``), else the
        one of the earliest frame (lowest step timestamp; the first ready among equals). So with
        frames overlapping, frame N+1's GPU work is queued before a node of frame N blocks on
        reading N's results back (the GPU works while the host decodes), and frame N finishes
        before frame N+1 reads its own results back. The order never changes what a node
        computes (each takes its inputs in timestamp order), only when."""
        if len(self.ready) == 1:                      # the usual case: no choice to make
            node = self.ready.popleft()
        else:
            node = next((n for n in self.ready if getattr(n.calc, "queues_only", False)), None)
            if node is None:
                node = min(self.ready, key=_step_order)
            self.ready.remove(node)
        step, node.step = node.step, None
        assert step is not None and node.cc is not None
        node.running = True
        self.running += 1
        return node, step

    def _execute(self, node: NodeState, step: Step) -> None:
        """Lock not held. Run a popped step."""
        try:
            self._run_step(node, step)
        except BaseException as e:   # a bug in the scheduler itself: fail the run rather than hang
            log.exception("pipeline scheduler error in node %r", node.name)
            with self.lock:
                self._fail(e)
                if node.running:
                    node.running = False
                    self.running -= 1
            self._finish_if_idle()

    def _live(self) -> bool:
        """Lock held. Whether packets still flow: no error, or draining after one."""
        return self.error is None or self.draining

    def _run_step(self, node: NodeState, step: Step) -> None:
        cc = node.cc
        assert cc is not None
        ts = step.timestamp if step.kind == "process" else _close_timestamp(node)
        cc.begin(ts, step.packets)
        err = self._call(node, step.kind, ts)
        calls: list[tuple[Stream, Packet]] = []
        ended = finish = False
        with self.lock:
            if err is not None:
                self._fail(err, node)
            elif self._live():
                calls = self._deliver(node)
                if not calls:                        # no observer to call unlocked: finish under this lock
                    self._end_step(node, step, ts, None)
                    ended, finish = True, self.error is not None
        if ended:
            if finish:                               # (else a later failure's own _finish_if_idle sees us idle)
                self._finish_if_idle()
            return
        err = err or _notify(calls, node)
        if err is not None:
            with self.lock:
                self._fail(err, node)
                drain = self.draining and step.kind == "process"
            if drain:                                # the failed node ends here; its close() outputs are dropped
                ts = _close_timestamp(node)
                cc.begin(ts, {})
                close_err = self._call(node, "close", ts)
                if close_err is not None:
                    log.warning("while stopping a failed node: %s", close_err)
                step = Step("close", ts)
        with self.lock:
            self._end_step(node, step, ts, err)
        self._finish_if_idle()

    def _end_step(self, node: NodeState, step: Step, ts: int, err: BaseException | None) -> None:
        """Lock held. The bookkeeping after a step: the node is idle again; schedule what follows."""
        node.running = False
        self.running -= 1
        if self.sleepers:
            self.cond.notify_all()                   # Graph.wait_for waits for idle producers
        if step.kind == "process":
            if err is None:
                node.processed += 1
                node.last_ts = ts if node.inputs else None
        else:
            node.closed = True
            if self._live():
                for s in node.outputs.values():
                    self._raise_bound(s, DONE)
        if self.error is None or self.draining:    # (_live inlined)
            # Look at the node again unless that cannot find a step: with its queues empty, select()
            # finds none unless every input ended (close), whatever bounds moved meanwhile.
            t = self._auto_bound(node)
            look = t is None or t == DONE
            if not look:
                for q in node.input_list:
                    if q.queue:
                        look = True
                        break
            if look:
                self.dirty.append(node)
            self._settle()
            self._check_done()

    # ---- errors, stalls, completion (lock held unless said) ----------------------------------------
    def _fail(self, err: BaseException, node: NodeState | None = None) -> None:
        """Record ``err`` (the first one is kept); drain when ``node`` failed, else abort."""
        first = self.error is None
        if first:
            self.error = err
            log.debug("pipeline stopped: %s", err)  # debug: add_packet, wait_for and close raise it to the caller
        if node is not None and (first or self.draining) and self.threads_started:
            self.draining = True
            node.failed = True                       # takes no more packets; its outputs end when it closes
            for q in node.inputs.values():
                q.queue.clear()
            for name in list(self.inputs_open):
                self.inputs_open.discard(name)
                self._raise_bound(self.streams[name], DONE)
        else:
            self.draining = False
            for n in self.ready:
                n.step = None
            self.ready.clear()
        self.cond.notify_all()

    def _finish_if_idle(self) -> None:
        """After a failure, once nothing runs (and, draining, nothing can): close the remaining
        calculators (lock not held)."""
        with self.lock:
            if self.error is None or self.running or self.aborting or self.done:
                return
            if self.draining:
                if self.ready:
                    return
                self._settle()
                self._check_done()
                if self.done or self.ready or self.running:
                    return
                log.warning("pipeline: draining after an error stalled; closing the remaining nodes")
            self.aborting = True
        for node in self.nodes:
            if node.opened and not node.closed:
                assert node.cc is not None
                ts = _close_timestamp(node)
                node.cc.begin(ts, {})              # outputs of this close() are discarded
                err = self._call(node, "close", ts)
                if err is not None:
                    log.warning("while stopping after an error: %s", err)
                node.closed = True
        with self.lock:
            self._set_done()

    def _set_done(self) -> None:
        self.done = self.stopping = True
        self.cond.notify_all()
        if self.tracer is not None:
            try:
                self.tracer.write()
            except OSError as e:
                log.warning("could not write pipeline trace %s: %s", self.tracer.path, e)


def _notify(calls: list[tuple[Stream, Packet]], node: NodeState) -> CalculatorError | None:
    """Call observers in order (lock not held); return the first failure as a CalculatorError."""
    for s, packet in calls:
        for cb in s.observers:
            try:
                cb(packet)
            except Exception as e:
                err = CalculatorError(node.name, node.spec.cls.__name__, f"observer of {s.name!r}",
                                      packet.timestamp, e)
                err.__cause__ = e
                return err
    return None


def _step_order(node: NodeState) -> int:
    """Sort key of a ready node: its step's timestamp (a step without one goes first)."""
    ts = node.step.timestamp if node.step is not None else None
    return -1 if ts is None else ts


def _close_timestamp(node: NodeState) -> int:
    """Default timestamp of packets emitted by ``close``: the earliest each output still allows."""
    ts = 0 if node.last_ts is None else node.last_ts + 1
    return max([ts, *(s.bound for s in node.outputs.values() if s.bound < DONE)])
