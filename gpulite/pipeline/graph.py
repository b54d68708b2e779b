"""``Graph``: a checked calculator graph that runs on a thread pool.

Life of a run: ``start()`` (or the first ``add_packet``) opens every calculator; packets flow;
``close()`` closes the graph inputs, lets everything drain, calls every calculator's ``close``
and re-raises the first calculator error. ``start()`` again begins a fresh run with new
calculator instances.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from gpulite.errors import GraphConfigError, GraphStateError
from gpulite.pipeline.config import GraphConfig, parse_yaml
from gpulite.pipeline.packet import Packet
from gpulite.pipeline.scheduler import Run
from gpulite.pipeline.tracing import NodeStats, Tracer
from gpulite.pipeline.validate import check_graph

log = logging.getLogger(__name__)


class Graph:
    """A calculator graph, checked against every calculator's contract at construction.

    Parameters
    ----------
    config
        The graph (from :class:`GraphBuilder` or :func:`parse_yaml`).
    side_packets
        Graph side packets by name (models, devices...), referenced by nodes' side inputs.
    add_packet_timeout
        Default seconds ``add_packet`` waits for room in a full queue before raising
        :class:`~gpulite.errors.GraphTimeoutError`; ``None`` waits forever.

    Raises
    ------
    GraphConfigError
        Unknown calculator, stream, port or option; type mismatch; missing port; cycle.

    Examples
    --------
    >>> g = Graph.from_config(yaml_text, side_packets={"model": interpreter})
    >>> g.observe("detections", lambda p: print(p.timestamp, p.payload))
    >>> for i, frame in enumerate(frames):
    ...     g.add_packet("image", frame, timestamp=i)
    >>> g.close()
    """

    def __init__(self, config: GraphConfig, *, side_packets: dict[str, Any] | None = None,
                 add_packet_timeout: float | None = 30.0) -> None:
        self.config = config
        self._side_packets = dict(side_packets or {})
        self._plan = check_graph(config, self._side_packets)
        self._observers: dict[str, list[Callable[[Packet], Any]]] = {}
        self._run: Run | None = None
        self._trace_path: str | None = None
        self.add_packet_timeout = add_packet_timeout

    @classmethod
    def from_config(cls, config: str | os.PathLike[str], *, side_packets: dict[str, Any] | None = None,
                    add_packet_timeout: float | None = 30.0) -> Graph:
        """Build a graph from YAML text, or from a YAML file given as a ``pathlib.Path``."""
        if isinstance(config, os.PathLike):
            with open(config, encoding="utf-8") as f:
                config = f.read()
        if not isinstance(config, str):
            raise GraphConfigError(f"from_config expects YAML text or a path, got {type(config).__name__}")
        return cls(parse_yaml(config), side_packets=side_packets, add_packet_timeout=add_packet_timeout)

    @property
    def input_streams(self) -> list[str]:
        return list(self._plan.input_streams)

    @property
    def output_streams(self) -> list[str]:
        return list(self._plan.output_streams)

    @property
    def node_names(self) -> list[str]:
        """Node names in topological order."""
        return [n.name for n in self._plan.nodes]

    def observe(self, stream: str, callback: Callable[[Packet], Any]) -> None:
        """Call ``callback(packet)`` for every packet on ``stream``, in timestamp order.

        Callbacks run on worker threads (on the caller's thread for graph inputs, and for every
        stream when the graph has ``num_threads: 0``); they should be
        quick, and must not call ``add_packet`` of a full stream. An exception in a callback stops
        the graph like a calculator error.
        """
        if stream not in self._plan.producers:
            raise GraphConfigError(f"observe({stream!r}): no such stream; streams: {sorted(self._plan.producers)}")
        if self._running():
            raise GraphStateError(f"observe({stream!r}) must come before start()")
        self._observers.setdefault(stream, []).append(callback)

    def enable_tracing(self, path: str | os.PathLike[str]) -> None:
        """Write a Chrome trace (per-node spans, queue depths) to ``path`` when each run ends."""
        if self._running():
            raise GraphStateError("enable_tracing() must come before start()")
        self._trace_path = os.fspath(path)

    def _running(self) -> bool:
        return self._run is not None and not self._run.done

    def start(self) -> None:
        """Open every calculator and start the workers; raises the first ``open`` error."""
        if self._running():
            raise GraphStateError("the graph is already running; close() it before start()")
        tracer = Tracer(self._trace_path) if self._trace_path else None
        self._run = Run(self._plan, self._observers, tracer)
        self._run.start()

    def add_packet(self, stream: str, payload: Any, *, timestamp: int | None = None,
                   timeout: float | None = None) -> None:
        """Send ``payload`` into graph input ``stream`` at ``timestamp`` (default: previous + 1).

        Blocks while a consumer's queue is full (back-pressure), at most ``timeout`` seconds
        (default ``add_packet_timeout``). Starts the graph if needed.

        Raises
        ------
        TimestampError
            ``timestamp`` is not after the stream's previous one.
        GraphTimeoutError
            No room came in time.
        CalculatorError
            A calculator failed earlier in this run.
        """
        if self._run is None:
            self.start()
        assert self._run is not None
        if self._run.done and self._run.error is None:
            raise GraphStateError(f"add_packet({stream!r}): the run is finished; call start() for a new run")
        self._run.add_packet(stream, payload, timestamp, self.add_packet_timeout if timeout is None else timeout)

    def close_input_stream(self, stream: str) -> None:
        """Close one graph input (its consumers then see its bound at DONE)."""
        if stream not in self._plan.input_streams:
            raise GraphConfigError(f"close_input_stream({stream!r}): inputs are {self._plan.input_streams}")
        if self._run is not None:
            self._run.close_inputs([stream])

    def close(self, *, timeout: float | None = None) -> None:
        """Close all graph inputs, drain, close every calculator; re-raise the run's first error."""
        if self._run is None:
            self.start()
        assert self._run is not None
        self._run.close_inputs(self._plan.input_streams)
        self._run.wait(timeout)

    def wait_for(self, streams: list[str], timestamp: int, *, timeout: float | None = None) -> None:
        """Block until every stream in ``streams`` is past ``timestamp`` and its observers have run.

        A stream is past ``timestamp`` once it carried a packet at (or after) it, or its bound
        moved beyond it without one. So after ``add_packet(..., timestamp=t)`` and
        ``wait_for(outputs, t)`` the observers have seen everything frame ``t`` produces:
        synchronous, frame-by-frame use (the solutions) without closing the graph.

        Raises
        ------
        CalculatorError
            A calculator failed in this run.
        GraphTimeoutError
            Not past ``timestamp`` within ``timeout`` seconds.
        GraphStateError, GraphConfigError
            The graph was never started; a name is not a stream.
        """
        unknown = [s for s in streams if s not in self._plan.producers]
        if unknown:
            raise GraphConfigError(f"wait_for({unknown}): no such stream; streams: {sorted(self._plan.producers)}")
        if self._run is None:
            raise GraphStateError("wait_for(): the graph was never started")
        self._run.wait_for(list(streams), timestamp, timeout)

    def wait_until_done(self, *, timeout: float | None = None) -> None:
        """Wait for the run to end (inputs must be closed) and re-raise its first calculator error."""
        if self._run is None:
            raise GraphStateError("wait_until_done(): the graph was never started")
        if not self._run.done and self._run.error is None and self._run.inputs_open:
            raise GraphStateError(f"wait_until_done(): graph inputs {sorted(self._run.inputs_open)} are still open "
                                  f"and the run cannot end; call close() instead")
        self._run.wait(timeout)

    def stats(self) -> dict[str, NodeStats]:
        """Per-node counters of the current or last run (zeros before the first run)."""
        if self._run is None:
            return {n.name: NodeStats(n.name, n.cls.__name__, 0, 0, 0.0, 0, 0) for n in self._plan.nodes}
        return self._run.stats()

    def busy_seconds(self) -> dict[str, float]:
        """Each node's ``busy_s`` of the current or last run (zeros before the first run)."""
        if self._run is None:
            return {n.name: 0.0 for n in self._plan.nodes}
        return self._run.busy_seconds()

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        """``close()`` (raising the run's error) unless an exception is leaving the block; then that one
        propagates, and a different error of the run, which would reach nobody, is logged."""
        if self._run is None or (self._run.done and self._run.error is None):
            return
        if exc is None:
            self.close()
            return
        try:
            self.close(timeout=5.0)
        except Exception as e:
            if e is not exc:
                log.warning("pipeline stopped: %s", e)
