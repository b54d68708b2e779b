"""``CalculatorContext``: what a calculator sees in ``open``/``process``/``close``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from gpulite.errors import TimestampError
from gpulite.pipeline.packet import DONE, UNSTARTED, Packet, check_timestamp
from gpulite.pipeline.ports import canonical_port, declared_type, runtime_types, type_name

log = logging.getLogger(__name__)


class _Bounded(Protocol):
    bound: int


class CalculatorContext:
    """Per-node view of the graph, reused for every call of one node in one run.

    Attributes
    ----------
    node_name : str
        The node's name in the graph (used in every error message).
    options : object
        The calculator's options dataclass instance (``None`` when it declares none).
    side_inputs : dict[str, Any]
        Side-input port -> value (unconnected optional ports are absent).
    inputs : dict[str, Any]
        Input port -> payload at :attr:`timestamp`, or ``None`` when that port has no packet now.
    packets : dict[str, Packet | None]
        The same, as packets.
    timestamp : int | None
        The input timestamp of this call; a counter for sources; in ``close`` one past the last
        processed timestamp; ``None`` in ``open``.
    """

    def __init__(self, *, node_name: str, options: Any, side_inputs: dict[str, Any], input_ports: list[str],
                 output_types: dict[str, Any], output_streams: dict[str, _Bounded | None],
                 input_bound: Callable[[str], int]) -> None:
        self.node_name = node_name
        self.options = options
        self.side_inputs = side_inputs
        self.inputs: dict[str, Any] = dict.fromkeys(input_ports)
        self.packets: dict[str, Packet | None] = dict.fromkeys(input_ports)
        self.timestamp: int | None = None
        self._output_types = output_types
        self._checks = {p: runtime_types(declared_type(output_types, p)) for p in output_streams}
        self._streams = output_streams
        self._ports: dict[str, tuple[str, Any, _Bounded | None]] = {}   # see _lookup
        self._input_bound = input_bound
        self._next: dict[str, int] = {}
        self.emitted: list[tuple[str, Packet]] = []
        self.bound_requests: dict[str, int] = {}
        self.drops = 0
        self.stopped = False

    def begin(self, timestamp: int | None, packets: dict[str, Packet]) -> None:
        """Scheduler: reset for one call."""
        self.timestamp = timestamp
        for port in self.inputs:
            p = packets.get(port)
            self.packets[port] = p
            self.inputs[port] = None if p is None else p.payload
        if self.emitted:                   # (new objects only when used: the scheduler reads them after the call)
            self.emitted = []
        if self.bound_requests:
            self.bound_requests = {}
        if self._next:
            self._next = {}

    def _port(self, port: str) -> str:
        return self._lookup(port)[0]

    def _lookup(self, port: str) -> tuple[str, Any, _Bounded | None]:
        """(canonical port, its runtime type check, its stream or None), checked once per spelling."""
        hit = self._ports.get(port) if type(port) is str else None
        if hit is not None:
            return hit
        key = canonical_port(port)
        if key not in self._checks:
            try:
                declared_type(self._output_types, key)
            except KeyError:
                raise KeyError(f"node {self.node_name!r} has no output port {port!r}; "
                               f"declared: {sorted(self._output_types)}") from None
        check = self._checks[key] if key in self._checks else runtime_types(declared_type(self._output_types, key))
        hit = self._ports[port] = (key, check, self._streams.get(key))
        return hit

    def has_output(self, port: str) -> bool:
        """True when ``port`` is connected to a stream (emitting to an unconnected port is a no-op)."""
        return self._streams.get(self._port(port)) is not None

    def output(self, port: str, payload: Any, *, timestamp: int | None = None) -> None:
        """Emit ``payload`` on ``port`` at ``timestamp`` (default :attr:`timestamp`).

        Raises ``TypeError`` when the payload does not match the port's declared type and
        :class:`TimestampError` when ``timestamp`` is not after the port's previous packet/bound.
        """
        key, check, stream = self._lookup(port)
        if check is not None and not isinstance(payload, check):
            want = type_name(declared_type(self._output_types, key))
            raise TypeError(f"node {self.node_name!r} output {key}: expected {want}, got {type(payload).__name__}")
        ts = self.timestamp if timestamp is None else timestamp
        if ts is None:
            raise TimestampError(f"node {self.node_name!r} output {key}: pass timestamp= (no input timestamp here)")
        if type(ts) is not int or not UNSTARTED < ts < DONE:
            ts = check_timestamp(ts, f"node {self.node_name!r} output {key}")
        if stream is None:
            return
        floor = stream.bound              # max(bound, the previous packet + 1, a bound requested in this call)
        nxt = self._next.get(key)
        if nxt is not None and nxt > floor:
            floor = nxt
        if self.bound_requests:
            req = self.bound_requests.get(key)
            if req is not None and req > floor:
                floor = req
        if ts < floor:
            raise TimestampError(f"node {self.node_name!r} output {key}: timestamp {ts} is not after the previous "
                                 f"packet or bound on this stream (next allowed: {floor})")
        self._next[key] = ts + 1
        self.emitted.append((key, Packet(payload, ts)))

    def set_next_timestamp_bound(self, port: str, timestamp: int) -> None:
        """Promise that ``port`` emits nothing before ``timestamp`` (lets downstream nodes proceed)."""
        key = self._port(port)
        if self._streams.get(key) is not None:
            ts = timestamp if timestamp == DONE else check_timestamp(timestamp, f"node {self.node_name!r} {key}")
            self.bound_requests[key] = max(ts, self.bound_requests.get(key, 0))

    def input_bound(self, port: str) -> int:
        """The smallest timestamp a not-yet-delivered packet on input ``port`` may have (DONE: closed)."""
        key = canonical_port(port)
        if key not in self.inputs:
            raise KeyError(f"node {self.node_name!r} has no connected input port {port!r}; "
                           f"connected: {sorted(self.inputs)}")
        return self._input_bound(key)

    def record_drop(self, n: int = 1) -> None:
        """Count ``n`` packets deliberately dropped (shown by ``Graph.stats()``)."""
        self.drops += n

    def stop(self) -> None:
        """From a source's ``process``: no more packets; the node closes after this call."""
        self.stopped = True
