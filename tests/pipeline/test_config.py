"""Graph configs: YAML parsing, builder, and every contract check raising GraphConfigError that
names the node and the port."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpulite.errors import CalculatorContractError, GraphConfigError
from gpulite.pipeline import (
    Calculator,
    CalculatorContext,
    GpuImage,
    Graph,
    GraphBuilder,
    parse_yaml,
    register_calculator,
    unregister_calculator,
)
from tests.pipeline import calcs  # registers the Test* calculators

GOOD = """
input_stream: "VALUE:x"
output_stream: "OUT:y"
node:
  - calculator: TestScale
    name: first
    input_stream: "IN:x"
    output_stream: "OUT:mid"
    options: {factor: 3}
  - calculator: TestScale
    input_stream: "IN:mid"
    output_stream: "OUT:y"
"""


def test_yaml_graph_runs():
    g = Graph.from_config(GOOD)
    out = []
    g.observe("y", out.append)
    g.add_packet("x", 1.0, timestamp=0)
    g.close()
    assert [p.payload for p in out] == [6.0]
    assert g.node_names == ["first", "TestScale"]
    assert g.input_streams == ["x"] and g.output_streams == ["y"]


def test_yaml_from_path(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(GOOD)
    assert Graph.from_config(Path(path)).node_names == ["first", "TestScale"]


def test_mediapipe_spellings_and_indexed_ports():
    cfg = parse_yaml("""
input_stream: ["a", "b"]
node:
  - calculator: TestJoin
    input_stream: ["A:0:a", "B:b"]
    output_stream: "OUT:ab"
  - calculator: FlowLimiter
    input_stream: ["IN:a", "FINISHED:ab"]
    input_stream_info: [{tag_index: "FINISHED", back_edge: true}]
    input_stream_handler: {input_stream_handler: "ImmediateInputStreamHandler"}
    output_stream: "OUT:limited"
""")
    assert cfg.nodes[0].inputs == {"A": "a", "B": "b"}
    assert cfg.nodes[1].back_edges == {"FINISHED"} and cfg.nodes[1].input_policy == "immediate"
    Graph(cfg)


def yaml_error(text: str, *patterns: str, side_packets: dict | None = None) -> str:
    with pytest.raises(GraphConfigError) as info:
        Graph.from_config(text, side_packets=side_packets)
    msg = str(info.value)
    for p in patterns:
        assert p in msg, f"{p!r} not in {msg!r}"
    return msg


def node_yaml(node: str, *, inputs: str = 'input_stream: "x"') -> str:
    return f"{inputs}\nnode:\n" + "\n".join("  " + line for line in node.strip().splitlines()) + "\n"


def test_unknown_stream():
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "IN:nope", output_stream: "OUT:y"}'),
               "node 's' (TestScale)", "input IN", "unknown stream 'nope'")


def test_type_mismatch():
    yaml_error(node_yaml("""
- {calculator: TestText, name: t, input_stream: "IN:x", output_stream: "OUT:text"}
- {calculator: TestScale, name: s, input_stream: "IN:text", output_stream: "OUT:y"}"""),
               "node 's' (TestScale)", "input IN expects float", "carries str", "node 't' (TestText) output OUT")


def test_missing_and_extra_ports():
    yaml_error(node_yaml('- {calculator: TestJoin, name: j, input_stream: "A:x", output_stream: "OUT:y"}'),
               "node 'j' (TestJoin)", "['B'] must be connected")
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: ["IN:x", "EXTRA:x"]}'),
               "node 's' (TestScale)", "unknown input port 'EXTRA'", "declares ['IN']")
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "IN:x", output_stream: "BAD:y"}'),
               "node 's' (TestScale)", "unknown output port 'BAD'")
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "x"}'),
               "node s (TestScale) input_stream", "needs a TAG: prefix")


def test_options_errors():
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "IN:x", options: {factr: 2}}'),
               "node 's' (TestScale)", "unknown option(s) ['factr']", "known: ['factor']")
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "IN:x", options: {factor: "big"}}'),
               "node 's' (TestScale)", "option 'factor'", "expected float, got str")
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "IN:x", options: {factor: true}}'),
               "option 'factor'", "got bool")
    yaml_error(node_yaml('- {calculator: TestJoin, name: j, input_stream: ["A:x", "B:x"], options: {k: 1}}'),
               "node 'j' (TestJoin)", "takes no options")
    yaml_error(node_yaml("""- {calculator: FlowLimiter, name: f, input_stream: ["IN:x", "FINISHED:o"],
   input_stream_info: {FINISHED: {back_edge: true}}, output_stream: "OUT:o", options: {max_in_flight: 0}}"""),
               "node 'f' (FlowLimiter)", "max_in_flight must be an int >= 1")


def test_bad_yaml_and_structure():
    yaml_error("node: [unclosed", "not valid YAML")
    yaml_error("- just a list", "must be a YAML mapping")
    yaml_error("nodes: []", "unknown key(s) ['nodes']")
    yaml_error(node_yaml('- {calculator: TestScale, input_stream: "IN:x", colour: red}'), "unknown key(s) ['colour']")
    yaml_error(node_yaml("- calculator: 7"), "node #0", "'calculator' must be a calculator name")
    yaml_error(node_yaml('- {calculator: TestScle, input_stream: "IN:x"}'), "unknown calculator 'TestScle'",
               "did you mean ['TestScale'")
    yaml_error(node_yaml('- {calculator: TestScale, input_stream: "in:x"}'), "UPPER_CASE")
    yaml_error(node_yaml('- {calculator: TestScale, input_stream: "IN:x"}') + "max_queue_size: 0\n",
               "max_queue_size must be an int >= 1")


def test_graph_level_errors():
    two = '- {calculator: TestScale, name: a, input_stream: "IN:x", output_stream: "OUT:y"}\n' \
          '- {calculator: TestScale, name: b, input_stream: "IN:x", output_stream: "OUT:y"}'
    yaml_error(node_yaml(two), "node 'b' (TestScale)",
               "output OUT stream 'y' is already produced by node 'a' port OUT")
    yaml_error(node_yaml('- {calculator: TestScale, name: a, input_stream: "IN:x"}\n'
                         '- {calculator: TestScale, name: a, input_stream: "IN:x"}'), "repeated: ['a']")
    yaml_error(node_yaml('- {calculator: TestScale, input_stream: "IN:x"}') + 'output_stream: "zz"\n',
               "graph output stream 'zz'")
    yaml_error(node_yaml('- {calculator: TestScale, name: a, input_stream: "IN:x"}', inputs='input_stream: ["x", "x"]'),
               "'x' is declared twice")


def test_cycles_need_back_edges_and_back_edges_need_immediate_policy():
    cycle = """
- {calculator: TestJoin, name: j, input_stream: ["A:x", "B:y"], output_stream: "OUT:z"}
- {calculator: TestJoin, name: k, input_stream: ["A:z", "B:x"], output_stream: "OUT:y"}"""
    yaml_error(node_yaml(cycle), "cycle through nodes ['j', 'k']", "back_edge")
    marked = cycle.replace('output_stream: "OUT:z"}',
                           'output_stream: "OUT:z", input_stream_info: {B: {back_edge: true}}}')
    yaml_error(node_yaml(marked), "node 'j' (TestJoin)", "back_edge input(s) ['B'] need input_policy 'immediate'")
    yaml_error(node_yaml('- {calculator: TestScale, name: s, input_stream: "IN:x", '
                         'input_stream_info: {OTHER: {back_edge: true}}}'), "node 's' (TestScale)",
               "back_edge port 'OTHER' is not a connected input")


@dataclass(frozen=True)
class Model:
    name: str = "m"


class UsesModel(Calculator):
    inputs = {"IN": Any}
    outputs = {"OUT": Any}
    side_inputs = {"MODEL": Model, "DEVICE": Any}
    optional_ports = frozenset({"DEVICE"})

    def open(self, cc: CalculatorContext) -> None:
        self.model = cc.side_inputs["MODEL"]
        assert "DEVICE" not in cc.side_inputs

    def process(self, cc: CalculatorContext) -> None:
        cc.output("OUT", (self.model.name, cc.inputs["IN"]))


def test_side_packets():
    def build(side: dict[str, Any], name: str = "model") -> Graph:
        b = GraphBuilder()
        b.input_stream("x")
        b.node(UsesModel, inputs={"IN": "x"}, outputs={"OUT": "y"}, side_inputs={"MODEL": name}, name="user")
        for k, v in side.items():
            b.side_packet(k, v)
        return b.build()

    g = build({"model": Model("face")})
    out = []
    g.observe("y", out.append)
    g.add_packet("x", 1)
    g.close()
    assert out[0].payload == ("face", 1)
    with pytest.raises(GraphConfigError, match=r"node 'user' \(UsesModel\): side input MODEL wants side packet"):
        build({})
    with pytest.raises(GraphConfigError, match=r"node 'user' \(UsesModel\): side input MODEL: expected Model, got str"):
        build({"model": "not a model"})
    b = GraphBuilder()
    b.input_stream("x")
    b.node(UsesModel, inputs={"IN": "x"}, name="user")
    with pytest.raises(GraphConfigError, match=r"node 'user' \(UsesModel\): side input port\(s\) \['MODEL'\]"):
        b.build()
    yaml_error('input_side_packet: "MODEL:model"\n' + node_yaml('- {calculator: TestScale, input_stream: "IN:x"}'),
               "input_side_packet(s) ['model'] were not given")


def test_builder_errors_name_the_node():
    b = GraphBuilder()
    with pytest.raises(GraphConfigError, match="port must be 'TAG' or 'TAG:index', got 'in'"):
        b.node("TestScale", inputs={"in": "x"}, name="s")
    with pytest.raises(GraphConfigError, match="stream name"):
        b.node("TestScale", inputs={"IN": "bad name"}, name="s")
    with pytest.raises(GraphConfigError, match="side packet 'm' is given twice"):
        b.side_packet("m", 1)
        b.side_packet("m", 2)


def test_registry_and_contract_checks():
    class TestScale(Calculator):  # same name as the registered one, another class
        def process(self, cc: CalculatorContext) -> None:
            pass

    with pytest.raises(CalculatorContractError, match="'TestScale' is already registered"):
        register_calculator(TestScale)
    register_calculator(calcs.TestScale)                      # the same class again is fine

    bad = {
        "process": type("NoProcess", (Calculator,), {}),
        "UPPER_CASE": type("LowerPort", (Calculator,), {"inputs": {"in": int}, "process": lambda s, cc: None}),
        "input_policy": type("BadPolicy", (Calculator,), {"input_policy": "fast", "process": lambda s, cc: None}),
        "dataclass": type("BadOptions", (Calculator,), {"options": dict, "process": lambda s, cc: None}),
        "optional_ports": type("BadOptional", (Calculator,), {"optional_ports": frozenset({"X"}),
                                                              "process": lambda s, cc: None}),
        "timestamp_offset": type("BadOffset", (Calculator,), {"timestamp_offset": -1, "process": lambda s, cc: None}),
    }
    for pattern, cls in bad.items():
        with pytest.raises(CalculatorContractError, match=pattern):
            register_calculator(cls)
        unregister_calculator(cls.__name__)
    b = GraphBuilder()
    b.node(bad["process"], name="n")
    with pytest.raises(GraphConfigError, match="must define process"):
        b.build()


def test_gpu_image_checks_and_size():
    img = GpuImage(handle=object(), width=4, height=3, format="rgba8unorm")
    assert img.size == (4, 3) and img.channels == 4 and img.nbytes == 48
    with pytest.raises(ValueError, match="format must be one of"):
        GpuImage(handle=None, width=4, height=3, format="yuv")
    with pytest.raises(ValueError, match="width must be a positive int"):
        GpuImage(handle=None, width=0, height=3, format="rgb8")
