"""Packet delivery and timestamp-bound propagation inside a run (every method: lock held).

Mixed into :class:`gpulite.pipeline.scheduler.Run`. ``_settle`` is the heart of scheduling: it
takes nodes whose inputs changed, lets each pick its next step by its input policy, queues
those that can run and propagates the output bounds of those that cannot.
"""

from __future__ import annotations

import threading
from collections import deque

from gpulite.pipeline.packet import DONE, Packet
from gpulite.pipeline.streams import THROTTLED, NodeState, Stream
from gpulite.pipeline.tracing import Tracer


class Propagation:
    """State shared with ``Run`` (declared here for type checkers)."""

    cond: threading.Condition
    tracer: Tracer | None
    error: BaseException | None
    draining: bool
    sleepers: int
    ready: deque[NodeState]
    dirty: deque[NodeState]

    def _deliver(self, node: NodeState) -> list[tuple[Stream, Packet]]:
        cc = node.cc
        assert cc is not None
        calls = []
        if cc.emitted:
            for port, packet in cc.emitted:
                s = node.outputs[port]
                self._push(s, packet)
                if s.observers:
                    calls.append((s, packet))
            cc.emitted = []
        for port, bound in cc.bound_requests.items():
            self._raise_bound(node.outputs[port], bound)
        return calls

    def _push(self, s: Stream, packet: Packet) -> None:
        s.bound = packet.timestamp + 1
        for q in s.consumers:
            if q.node.closed or q.node.failed:
                continue
            q.queue.append(packet)
            depth = len(q.queue)
            if depth > q.max_depth:
                q.max_depth = depth
            if self.tracer is not None:
                self.tracer.queue_depth(q.node.name, q.port, depth)
            self.dirty.append(q.node)

    def _raise_bound(self, s: Stream, bound: int) -> None:
        if bound > s.bound:
            s.bound = bound
            self.dirty.extend(q.node for q in s.consumers)

    def _auto_bound(self, node: NodeState) -> int | None:
        """Offset-0 nodes: outputs can never be earlier than the next input, so tell consumers.
        Returns the node's ``t_min`` when it looked (None when the node has no such bound)."""
        off = node.offset
        if off is None or not node.inputs or node.closed or node.running:
            return None
        t = node.t_min()
        if t != DONE:
            b = min(t + off, DONE - 1)
            for s in node.outputs.values():
                if b > s.bound:                        # _raise_bound inlined
                    s.bound = b
                    self.dirty.extend(q.node for q in s.consumers)
        return t

    def _settle(self) -> None:
        """Schedule every dirty node that can run; propagate bounds of those that cannot."""
        while self.dirty:
            node = self.dirty.popleft()
            if ((self.error is not None and not self.draining) or node.closed or node.failed or node.running
                    or node.step is not None or not node.opened):
                continue                                # (a node that runs is looked at again after its step)
            step = node.select()
            node.throttled = step is THROTTLED
            if step is None or step is THROTTLED:
                off = node.offset                       # _auto_bound inlined (node neither closed nor running)
                if off is not None and node.inputs:
                    t = node.t_min()
                    if t != DONE:
                        b = min(t + off, DONE - 1)
                        for s in node.outputs.values():
                            if b > s.bound:
                                s.bound = b
                                self.dirty.extend(q.node for q in s.consumers)
                continue
            node.step = step
            self.ready.append(node)
            if self.sleepers:
                self.cond.notify()
            for port in step.packets:                   # the queues select() took one packet from
                q = node.inputs[port]
                if self.tracer is not None:
                    self.tracer.queue_depth(node.name, q.port, len(q.queue))
                if len(q.queue) + 1 >= q.limit:         # was full: its producer may go on
                    if q.stream.producer is None:
                        self.cond.notify_all()
                    else:
                        self.dirty.append(q.stream.producer)
