"""Check a ``GraphConfig`` against every calculator's contract and resolve it into a ``Plan``.

Everything a graph can get wrong before running is caught here and raised as
:class:`GraphConfigError` naming the node (``name (Calculator)``) and the port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulite.errors import CalculatorContractError, GraphConfigError
from gpulite.pipeline.calculator import POLICIES, Calculator, check_contract
from gpulite.pipeline.config import GraphConfig, NodeConfig
from gpulite.pipeline.options import make_options
from gpulite.pipeline.ports import declared_type, runtime_types, type_name, types_compatible
from gpulite.pipeline.registry import get_calculator


@dataclass
class NodeSpec:
    """A checked node: calculator class, options instance, resolved side inputs."""

    name: str
    cls: type[Calculator]
    options: Any
    inputs: dict[str, str]
    outputs: dict[str, str]
    side_inputs: dict[str, Any]
    back_edges: frozenset[str]
    policy: str

    @property
    def label(self) -> str:
        return f"node {self.name!r} ({self.cls.__name__})"


@dataclass
class Plan:
    """A checked graph; ``nodes`` in topological order of forward edges."""

    nodes: list[NodeSpec]
    input_streams: list[str]
    output_streams: list[str]
    producers: dict[str, tuple[str, str] | None]   # stream -> (node, port), None for graph inputs
    max_queue_size: int
    num_threads: int | None


def _resolve_class(calc: Any) -> type[Calculator]:
    if isinstance(calc, str):
        return get_calculator(calc)
    try:
        check_contract(calc)
    except CalculatorContractError as e:
        raise GraphConfigError(str(e)) from None
    return calc


def _names(nodes: list[NodeConfig], classes: list[type[Calculator]]) -> list[str]:
    taken = [n.name for n in nodes if n.name is not None]
    dup = {n for n in taken if taken.count(n) > 1}
    if dup:
        raise GraphConfigError(f"node names must be unique; repeated: {sorted(dup)}")
    used, out = set(taken), []
    for n, cls in zip(nodes, classes, strict=True):
        name, k = n.name, 2
        if name is None:
            name = cls.__name__
            while name in used:
                name, k = f"{cls.__name__}_{k}", k + 1
            used.add(name)
        out.append(name)
    return out


def _check_ports(label: str, kind: str, given: dict[str, str], cls: type[Calculator]) -> None:
    declared: dict[str, Any] = getattr(cls, kind)
    what = {"inputs": "input", "outputs": "output", "side_inputs": "side input"}[kind]
    for port in given:
        try:
            declared_type(declared, port)
        except KeyError:
            raise GraphConfigError(f"{label}: unknown {what} port {port!r}; "
                                   f"{cls.__name__} declares {sorted(declared) or 'none'}") from None
    if kind != "outputs":
        missing = [p for p in declared if p not in given and p not in cls.optional_ports]
        if missing:
            raise GraphConfigError(f"{label}: {what} port(s) {missing} must be connected")


def _node(cfg: NodeConfig, name: str, cls: type[Calculator], side_packets: dict[str, Any]) -> NodeSpec:
    label = f"node {name!r} ({cls.__name__})"
    for kind, given in (("inputs", cfg.inputs), ("outputs", cfg.outputs), ("side_inputs", cfg.side_inputs)):
        _check_ports(label, kind, given, cls)
    policy = cfg.input_policy or cls.input_policy
    if policy not in POLICIES:
        raise GraphConfigError(f"{label}: input_policy must be one of {POLICIES}, got {policy!r}")
    for port in cfg.back_edges:
        if port not in cfg.inputs:
            raise GraphConfigError(f"{label}: back_edge port {port!r} is not a connected input ({sorted(cfg.inputs)})")
    if cfg.back_edges and policy != "immediate":
        raise GraphConfigError(f"{label}: back_edge input(s) {sorted(cfg.back_edges)} need input_policy "
                               f"'immediate' (a timestamp-synchronised back edge waits on itself), got {policy!r}")
    if cfg.inputs and set(cfg.inputs) == set(cfg.back_edges):
        raise GraphConfigError(f"{label}: every input is a back edge; at least one forward input is needed")
    sides = {}
    for port, packet in cfg.side_inputs.items():
        if packet not in side_packets:
            raise GraphConfigError(f"{label}: side input {port} wants side packet {packet!r}, "
                                   f"not given (given: {sorted(side_packets)})")
        value, allowed = side_packets[packet], runtime_types(declared_type(cls.side_inputs, port))
        if allowed is not None and not isinstance(value, allowed):
            raise GraphConfigError(f"{label}: side input {port}: expected "
                                   f"{type_name(declared_type(cls.side_inputs, port))}, got {type(value).__name__}")
        sides[port] = value
    options = make_options(cls.options, cfg.options, label)
    return NodeSpec(name, cls, options, dict(cfg.inputs), dict(cfg.outputs), sides, frozenset(cfg.back_edges), policy)


def _toposort(nodes: list[NodeSpec], producers: dict[str, tuple[str, str] | None]) -> list[NodeSpec]:
    deps = {n.name: {producers[s][0] for p, s in n.inputs.items()  # type: ignore[index]
                     if p not in n.back_edges and producers[s] is not None} for n in nodes}
    order: list[NodeSpec] = []
    done: set[str] = set()
    pending = list(nodes)
    while pending:
        ready = [n for n in pending if deps[n.name] <= done]
        if not ready:
            names = sorted(n.name for n in pending)
            raise GraphConfigError(f"the graph has a cycle through nodes {names}; mark the input that closes it "
                                   f"with input_stream_info {{PORT: {{back_edge: true}}}}")
        order += ready
        done |= {n.name for n in ready}
        pending = [n for n in pending if n.name not in done]
    return order


def check_graph(cfg: GraphConfig, side_packets: dict[str, Any]) -> Plan:
    """Check ``cfg`` and return its :class:`Plan`; raises :class:`GraphConfigError`."""
    missing = [n for n in cfg.side_packet_names if n not in side_packets]
    if missing:
        raise GraphConfigError(f"graph input_side_packet(s) {missing} were not given (given: {sorted(side_packets)})")
    if isinstance(cfg.max_queue_size, bool) or not isinstance(cfg.max_queue_size, int) or cfg.max_queue_size < 1:
        raise GraphConfigError(f"max_queue_size must be an int >= 1, got {cfg.max_queue_size!r}")
    classes = [_resolve_class(n.calculator) for n in cfg.nodes]
    names = _names(cfg.nodes, classes)
    nodes = [_node(c, n, k, side_packets) for c, n, k in zip(cfg.nodes, names, classes, strict=True)]
    producers: dict[str, tuple[str, str] | None] = {}
    for s in cfg.input_streams:
        if s in producers:
            raise GraphConfigError(f"graph input stream {s!r} is declared twice")
        producers[s] = None
    for n in nodes:
        for port, s in n.outputs.items():
            if s in producers:
                prev = producers[s]
                by = "a graph input" if prev is None else f"node {prev[0]!r} port {prev[1]}"
                raise GraphConfigError(f"{n.label}: output {port} stream {s!r} is already produced by {by}")
            producers[s] = (n.name, port)
    by_name = {n.name: n for n in nodes}
    for n in nodes:
        for port, s in n.inputs.items():
            if s not in producers:
                raise GraphConfigError(f"{n.label}: input {port}: unknown stream {s!r} (no graph input or node "
                                       f"output has that name)")
            prod = producers[s]
            if prod is None:
                continue
            src = by_name[prod[0]]
            out_t, in_t = declared_type(src.cls.outputs, prod[1]), declared_type(n.cls.inputs, port)
            if not types_compatible(out_t, in_t):
                raise GraphConfigError(f"{n.label}: input {port} expects {type_name(in_t)} but stream {s!r} carries "
                                       f"{type_name(out_t)} from {src.label} output {prod[1]}")
    for s in cfg.output_streams:
        if s not in producers:
            raise GraphConfigError(f"graph output stream {s!r} is produced by no node and is no graph input")
    return Plan(_toposort(nodes, producers), list(cfg.input_streams), list(cfg.output_streams), producers,
                cfg.max_queue_size, cfg.num_threads)
