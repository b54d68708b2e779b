"""Graph configs: plain dataclasses, built by ``GraphBuilder`` or parsed from MediaPipe-like YAML.

YAML format (stream specs are ``"TAG:name"`` or ``"TAG:index:name"``; a value may be a string or
a list of strings)::

    input_stream: "IMAGE:image"
    output_stream: "DETECTIONS:detections"
    input_side_packet: "MODEL:model"          # names that Graph.from_config(side_packets=) must give
    max_queue_size: 8                         # per input queue; optional
    num_threads: 4                            # optional; 0: no worker threads, the callers run the nodes
    node:
      - calculator: FlowLimiter
        name: limiter                         # optional; default: calculator name (+ _2, _3...)
        input_stream: ["IN:image", "FINISHED:detections"]
        input_stream_info: {FINISHED: {back_edge: true}}
        output_stream: "OUT:throttled_image"
        input_side_packet: "MODEL:model"      # port -> graph side packet
        input_policy: immediate               # optional override ("default" | "immediate")
        options: {max_in_flight: 1}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpulite.errors import GraphConfigError, brief
from gpulite.pipeline.ports import parse_stream_spec

_GRAPH_KEYS = {"input_stream", "output_stream", "input_side_packet", "node", "max_queue_size", "num_threads"}
_NODE_KEYS = {"calculator", "name", "input_stream", "output_stream", "input_side_packet", "options",
              "input_stream_info", "input_policy", "input_stream_handler"}
_HANDLERS = {"DefaultInputStreamHandler": "default", "ImmediateInputStreamHandler": "immediate"}
# Bound on a YAML config's size with its aliases expanded (the graphs gpulite ships have < 1000).
YAML_MAX_NODES = 100_000


@dataclass
class NodeConfig:
    """One node: a calculator (registered name or class) and its connections."""

    calculator: Any
    name: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)        # port -> stream
    outputs: dict[str, str] = field(default_factory=dict)       # port -> stream
    side_inputs: dict[str, str] = field(default_factory=dict)   # port -> graph side packet name
    options: Any = None                                         # mapping, dataclass instance or None
    back_edges: set[str] = field(default_factory=set)           # input ports fed from downstream
    input_policy: str | None = None                             # None: the calculator's own


@dataclass
class GraphConfig:
    """A whole graph; validated into a runnable plan by ``Graph``."""

    input_streams: list[str] = field(default_factory=list)
    output_streams: list[str] = field(default_factory=list)
    side_packet_names: list[str] = field(default_factory=list)
    nodes: list[NodeConfig] = field(default_factory=list)
    max_queue_size: int = 16
    num_threads: int | None = None


def _as_list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        return [value]
    if isinstance(value, list):
        return value
    raise GraphConfigError(f"{where}: expected a string or a list of strings, "
                           f"got {type(value).__name__} {brief(value)}")


def _specs(value: Any, where: str, *, tagged: bool) -> list[tuple[str | None, str]]:
    out = []
    for spec in _as_list(value, where):
        try:
            out.append(parse_stream_spec(spec, tagged=tagged))
        except ValueError as e:
            raise GraphConfigError(f"{where}: {e}") from None
    return out


def _ports(value: Any, where: str) -> dict[str, str]:
    ports: dict[str, str] = {}
    for port, name in _specs(value, where, tagged=True):
        assert port is not None
        if port in ports:
            raise GraphConfigError(f"{where}: port {port} is given twice ({brief(ports[port])} and {brief(name)})")
        ports[port] = name
    return ports


def _back_edges(info: Any, where: str) -> set[str]:
    if info is None:
        return set()
    items = info.items() if isinstance(info, dict) else [(i.get("tag_index"), i) for i in _as_list(info, where)
                                                           if isinstance(i, dict)]
    edges = set()
    for port, spec in items:
        if not isinstance(port, str) or not isinstance(spec, dict) or set(spec) - {"back_edge", "tag_index"}:
            raise GraphConfigError(f"{where}: expected {{PORT: {{back_edge: true}}}}, got {brief(info)}")
        if spec.get("back_edge"):
            edges.add(port)
    return edges


def parse_node(raw: Any, index: int) -> NodeConfig:
    where = f"node #{index}"
    if not isinstance(raw, dict):
        raise GraphConfigError(f"{where}: expected a mapping with 'calculator', got {type(raw).__name__} {brief(raw)}")
    calc = raw.get("calculator")
    if not isinstance(calc, str):
        raise GraphConfigError(f"{where}: 'calculator' must be a calculator name, got {brief(calc)}")
    name = raw.get("name")
    label = name if isinstance(name, str) and len(name) <= 80 else brief(name)  # unquoted, as users write it
    where = f"node {label if name else '#' + str(index)} ({calc})"
    unknown = set(raw) - _NODE_KEYS
    if unknown:
        raise GraphConfigError(f"{where}: unknown key(s) {brief(sorted(map(str, unknown)))}; "
                               f"allowed: {sorted(_NODE_KEYS)}")
    policy = raw.get("input_policy")
    handler = raw.get("input_stream_handler")
    if handler is not None:
        hname = handler.get("input_stream_handler") if isinstance(handler, dict) else handler
        if not isinstance(hname, str) or hname not in _HANDLERS:
            raise GraphConfigError(f"{where}: input_stream_handler must be one of {sorted(_HANDLERS)}, "
                                   f"got {brief(hname)}")
        policy = _HANDLERS[hname]
    return NodeConfig(
        calculator=calc, name=name,
        inputs=_ports(raw.get("input_stream"), f"{where} input_stream"),
        outputs=_ports(raw.get("output_stream"), f"{where} output_stream"),
        side_inputs=_ports(raw.get("input_side_packet"), f"{where} input_side_packet"),
        options=raw.get("options"), back_edges=_back_edges(raw.get("input_stream_info"), f"{where} input_stream_info"),
        input_policy=policy)


def _expanded_size(root: Any) -> int:
    """Nodes in a composed YAML document counted as if every alias were copied out.

    Aliases make the composed document a DAG; its expanded size is what anything that walks
    the loaded value (validation, ``repr``, a copy) pays. Counted bottom-up once per node, so
    the count itself is linear in the document. A recursive alias raises GraphConfigError.
    """
    import yaml

    def children(node: Any) -> list[Any]:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if isinstance(node, yaml.MappingNode):
            return [n for pair in node.value for n in pair]
        return []

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children(node))
            if sizes[key] > YAML_MAX_NODES:
                raise GraphConfigError(f"graph config: expected at most {YAML_MAX_NODES} YAML nodes with aliases "
                                       f"expanded, got more (line {node.start_mark.line + 1})")
        elif key in on_path:
            raise GraphConfigError(f"graph config: a YAML alias refers to a node that contains it "
                                   f"(line {node.start_mark.line + 1})")
        elif key not in sizes:
            on_path.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children(node))
    return sizes[id(root)]


def _load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with the document's expanded size bounded by ``YAML_MAX_NODES``."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_yaml(text: str) -> GraphConfig:
    """Parse a YAML graph config; every problem raises :class:`GraphConfigError`.

    Aliases are allowed, but the document with them expanded may hold at most
    ``YAML_MAX_NODES`` nodes (so a few hundred bytes of nested aliases cannot stand for
    billions of values), and nesting deeper than Python's recursion limit is refused.
    """
    import yaml

    try:
        raw = _load_yaml(text)
    except yaml.YAMLError as e:
        raise GraphConfigError(f"graph config is not valid YAML: {brief(str(e))}") from None
    except RecursionError:
        raise GraphConfigError("graph config: YAML nested too deeply") from None
    if not isinstance(raw, dict):
        raise GraphConfigError(f"graph config must be a YAML mapping with a 'node' list, got {type(raw).__name__}")
    unknown = set(raw) - _GRAPH_KEYS
    if unknown:
        raise GraphConfigError(f"graph config: unknown key(s) {brief(sorted(map(str, unknown)))}; "
                               f"allowed: {sorted(_GRAPH_KEYS)}")
    nodes = raw.get("node") or []
    if not isinstance(nodes, list):
        raise GraphConfigError(f"graph config: 'node' must be a list of nodes, got {type(nodes).__name__}")
    cfg = GraphConfig(
        input_streams=[n for _, n in _specs(raw.get("input_stream"), "graph input_stream", tagged=False)],
        output_streams=[n for _, n in _specs(raw.get("output_stream"), "graph output_stream", tagged=False)],
        side_packet_names=[n for _, n in _specs(raw.get("input_side_packet"), "graph input_side_packet", tagged=False)],
        nodes=[parse_node(n, i) for i, n in enumerate(nodes)])
    for key, least in (("max_queue_size", 1), ("num_threads", 0)):
        if key in raw:
            v = raw[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise GraphConfigError(f"graph config: {key} must be an int >= {least}, got {brief(v)}")
            setattr(cfg, key, v)
    return cfg
