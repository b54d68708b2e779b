"""``GraphBuilder``: build a graph config in Python."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpulite.errors import GraphConfigError
from gpulite.pipeline.config import GraphConfig, NodeConfig
from gpulite.pipeline.graph import Graph
from gpulite.pipeline.ports import canonical_port, check_stream_name, parse_stream_spec


class GraphBuilder:
    """Collects streams, nodes and side packets; :meth:`build` checks everything.

    Examples
    --------
    >>> b = GraphBuilder()
    >>> b.input_stream("x")
    >>> b.node("Scale", inputs={"IN": "x"}, outputs={"OUT": "y"}, options={"factor": 3.0})
    >>> b.output_stream("y")
    >>> g = b.build()
    """

    def __init__(self) -> None:
        self.config = GraphConfig()
        self.side_packets: dict[str, Any] = {}

    def input_stream(self, spec: str) -> str:
        """Declare a graph input stream (``"name"`` or ``"TAG:name"``); returns the name."""
        name = self._stream(spec, "input_stream")
        self.config.input_streams.append(name)
        return name

    def output_stream(self, spec: str) -> str:
        """Declare a graph output stream (``"name"`` or ``"TAG:name"``); returns the name."""
        name = self._stream(spec, "output_stream")
        self.config.output_streams.append(name)
        return name

    def side_packet(self, name: str, value: Any) -> None:
        """Give a graph side packet (a model, a device...) that nodes reference by ``name``."""
        if name in self.side_packets:
            raise GraphConfigError(f"side packet {name!r} is given twice")
        self.side_packets[name] = value

    def node(self, calculator: str | type, *, inputs: dict[str, str] | None = None,
             outputs: dict[str, str] | None = None, side_inputs: dict[str, str] | None = None,
             options: Any = None, name: str | None = None, back_edges: Iterable[str] = (),
             input_policy: str | None = None) -> NodeConfig:
        """Add a node running ``calculator`` (registered name or Calculator subclass).

        ``inputs``/``outputs`` map ports (``"TAG"`` or ``"TAG:index"``) to stream names;
        ``side_inputs`` maps side-input ports to side-packet names; ``back_edges`` names input ports
        fed from downstream (loops, e.g. a FlowLimiter's ``FINISHED``).
        """
        label = f"node {name or calculator if isinstance(calculator, str) else name or calculator.__name__!r}"
        cfg = NodeConfig(calculator=calculator, name=name, options=options, input_policy=input_policy,
                         inputs=self._ports(inputs, label, "inputs"), outputs=self._ports(outputs, label, "outputs"),
                         side_inputs=self._ports(side_inputs, label, "side_inputs"),
                         back_edges={self._port(p, label) for p in back_edges})
        self.config.nodes.append(cfg)
        return cfg

    def build(self, *, max_queue_size: int = 16, num_threads: int | None = None,
              add_packet_timeout: float | None = 30.0) -> Graph:
        """Check the graph against every calculator's contract and return it (GraphConfigError if not)."""
        self.config.max_queue_size = max_queue_size
        self.config.num_threads = num_threads
        return Graph(self.config, side_packets=self.side_packets, add_packet_timeout=add_packet_timeout)

    @staticmethod
    def _stream(spec: str, where: str) -> str:
        try:
            return parse_stream_spec(spec, tagged=False)[1]
        except ValueError as e:
            raise GraphConfigError(f"{where}: {e}") from None

    @staticmethod
    def _port(port: str, label: str) -> str:
        try:
            return canonical_port(port)
        except (ValueError, AttributeError):
            raise GraphConfigError(f"{label}: port must be 'TAG' or 'TAG:index', got {port!r}") from None

    def _ports(self, mapping: dict[str, str] | None, label: str, kind: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for port, stream in (mapping or {}).items():
            key = self._port(port, label)
            try:
                out[key] = check_stream_name(stream)
            except ValueError as e:
                raise GraphConfigError(f"{label} {kind} {key}: {e}") from None
        return out
