"""Run-time state of streams, input queues and nodes; input policies (which packets a node takes next).

All of it is guarded by the scheduler's lock; only the node's own worker touches a running node.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.context import CalculatorContext
from gpulite.pipeline.packet import DONE, UNSTARTED, Packet
from gpulite.pipeline.validate import NodeSpec


class Stream:
    """One named stream: its producer, its consumers' queues, observers and its timestamp bound."""

    __slots__ = ("bound", "consumers", "name", "observers", "producer")

    def __init__(self, name: str, producer: NodeState | None) -> None:
        self.name = name
        self.producer = producer
        self.bound = UNSTARTED            # every future packet has timestamp >= bound
        self.consumers: list[InputQueue] = []
        self.observers: list[Callable[[Packet], Any]] = []


class InputQueue:
    """A node's input port: bounded FIFO of packets from one stream."""

    __slots__ = ("back_edge", "limit", "max_depth", "node", "port", "queue", "stream")

    def __init__(self, node: NodeState, port: str, stream: Stream, back_edge: bool, limit: int) -> None:
        self.node, self.port, self.stream, self.back_edge, self.limit = node, port, stream, back_edge, limit
        self.queue: deque[Packet] = deque()
        self.max_depth = 0

    def next_ts(self) -> int:
        """Smallest timestamp this port may still deliver (DONE when closed and empty)."""
        return self.queue[0].timestamp if self.queue else self.stream.bound

    def full(self) -> bool:
        return not self.back_edge and len(self.queue) >= self.limit


@dataclass(slots=True)
class Step:
    kind: str                         # "process" | "close"
    timestamp: int | None
    packets: dict[str, Packet] = field(default_factory=dict)


THROTTLED = Step("throttled", None)


@dataclass
class NodeState:
    spec: NodeSpec
    calc: Calculator
    cc: CalculatorContext | None = None
    inputs: dict[str, InputQueue] = field(default_factory=dict)
    outputs: dict[str, Stream] = field(default_factory=dict)
    opened: bool = False
    closed: bool = False
    failed: bool = False              # raised while draining: takes no more packets, closes at once
    running: bool = False
    step: Step | None = None          # set while queued on the ready list
    throttled: bool = False           # would run, but a consumer queue is full
    source_ts: int = 0
    last_ts: int | None = None
    processed: int = 0
    busy_s: float = 0.0
    growths: int = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @functools.cached_property
    def forward(self) -> list[InputQueue]:
        """The inputs that are not back edges (read once the run has connected them all)."""
        return [q for q in self.inputs.values() if not q.back_edge]

    @functools.cached_property
    def offset(self) -> int | None:
        """The calculator's ``timestamp_offset``."""
        return self.spec.cls.timestamp_offset

    @functools.cached_property
    def input_list(self) -> list[InputQueue]:
        """The inputs, in port order (read once the run has connected them all)."""
        return list(self.inputs.values())

    @functools.cached_property
    def consumer_queues(self) -> list[InputQueue]:
        """The queues fed by this node's outputs, back edges aside (read once the run is connected)."""
        return [q for s in self.outputs.values() for q in s.consumers if not q.back_edge]

    def t_min(self) -> int:
        """Smallest timestamp the node may still process on forward inputs (DONE when all are done)."""
        t = DONE  # (InputQueue.next_ts inlined: the scheduler asks this several times per node and frame)
        for q in self.forward:
            v = q.queue[0].timestamp if q.queue else q.stream.bound
            if v < t:
                t = v
        return t

    def blocked_by_consumers(self) -> bool:
        for q in self.consumer_queues:
            if len(q.queue) >= q.limit:  # InputQueue.full inlined
                return True
        return False

    def select(self) -> Step | None:
        """The next step (packets popped), THROTTLED, or None when nothing is ready."""
        if not self.inputs:                                    # a source
            if self.cc is not None and self.cc.stopped:
                return Step("close", None)
            if self.blocked_by_consumers():
                return THROTTLED
            ts, self.source_ts = self.source_ts, self.source_ts + 1
            return Step("process", ts)
        if self.spec.policy == "immediate":
            heads = [q for q in self.inputs.values() if q.queue]
            if not heads:
                return Step("close", None) if self.t_min() == DONE else None
            t = min(q.queue[0].timestamp for q in heads)
        else:
            t = self.t_min()
            if t == DONE:
                return Step("close", None)
            heads = []
            for q in self.input_list:
                if q.queue:
                    heads.append(q)
                elif q.stream.bound <= t:
                    return None                                # this input may still bring a packet at t
        if self.blocked_by_consumers():
            return THROTTLED
        return Step("process", t, {q.port: q.queue.popleft() for q in heads if q.queue[0].timestamp == t})
