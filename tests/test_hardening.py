"""Hostile and unlucky inputs (issue 14): each gets a typed error or the right answer, in bounded time.

Covered here: linear-time execution order and memory plan (100k-op chains), decoding bombs
(FlexBuffer custom options, YAML graph configs) and bounded error messages, corrupt videos in
a running graph, and graph errors that drain the graph instead of cutting its sinks short.
The compiled-loops cache is covered in tests/test_cpu_loops.py.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import gpulite
from gpulite.errors import CalculatorError, GraphConfigError, ModelError, brief
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.plan import ALIGN, plan_memory, topological_order
from gpulite.pipeline import Calculator, GraphBuilder, parse_yaml
from gpulite.pipeline.calculators.sinks import VideoWriter
from gpulite.pipeline.calculators.sources import VideoReader
from gpulite.testing.tflite_writer import ModelBuilder


# --- scale: execution order and memory plan ---------------------------------------------------
def _chain(n: int, *, reverse: bool = False) -> Graph:
    tensors = [TensorInfo(i, f"t{i}", (1, 8), np.dtype(np.float32)) for i in range(n + 1)]
    nodes = [Node(i, "RELU", (i,), (i + 1,)) for i in range(n)]
    return Graph(tensors, nodes[::-1] if reverse else nodes, (0,), (n,))


@pytest.mark.timeout(120)  # the quadratic versions took minutes to hours here
@pytest.mark.parametrize("reverse", [False, True], ids=["file-order", "reverse-order"])
def test_100k_op_chain_orders_and_plans(reverse):
    n = 100_000
    g = _chain(n, reverse=reverse)
    order = topological_order(g)
    assert [node.index for node in order] == list(range(n))
    plan = plan_memory(g, order)
    # Graph input and output live throughout; the intermediates ping-pong between two slots.
    assert plan.arena_bytes == 4 * ALIGN
    assert len(set(plan.offsets.values())) == 4


def _reference_plan(g: Graph, order: list[Node]) -> dict[int, int]:
    """The greedy-by-size placement written the direct O(n^2) way (what plan_memory must equal)."""
    from gpulite.graph.plan import lifetimes

    life = lifetimes(g, order)
    size = {t: -(-max(g.tensors[t].nbytes, 0) // ALIGN) * ALIGN for t in life}
    placed: list[tuple[int, int, int, int]] = []
    offsets = {}
    for t in sorted(life, key=lambda t: (-g.tensors[t].nbytes, t)):
        first, last = life[t]
        off = 0
        for o, e in sorted((o, e) for o, e, f, l_ in placed if not (l_ < first or last < f)):
            if off + size[t] <= o:
                break
            off = max(off, e)
        offsets[t] = off
        placed.append((off, off + size[t], first, last))
    return offsets


def _random_dag(rng: random.Random) -> Graph:
    n_tensors = rng.randint(4, 60)
    tensors = [TensorInfo(i, f"t{i}", (rng.choice([1, 7, 64, 300, 5000]),), np.dtype(np.float32))
               for i in range(n_tensors)]
    available, nodes = [0, 1], []
    for t in range(2, n_tensors):
        nodes.append(Node(len(nodes), "ADD", tuple(rng.choice(available) for _ in range(rng.randint(1, 3))), (t,)))
        available.append(t)
    rng.shuffle(nodes)  # file order need not be an execution order
    return Graph(tensors, nodes, (0, 1), (n_tensors - 1,))


def test_plan_equals_the_direct_greedy_placement():
    rng = random.Random(14)
    for _ in range(300):
        g = _random_dag(rng)
        order = topological_order(g)
        seen = {0, 1}
        for node in order:
            assert all(i in seen for i in node.inputs), "an input is used before it is produced"
            seen.update(node.outputs)
        assert plan_memory(g, order).offsets == _reference_plan(g, order)


def test_topological_order_errors_still_name_the_node():
    g = _chain(5)
    g.nodes[2] = Node(2, "RELU", (4,), (3,))  # 2 reads 4, which 3 makes from 3: a cycle
    with pytest.raises(ModelError, match=r"node 2 \(RELU\) reads tensors \[4\] that have a cycle"):
        topological_order(g)


@pytest.mark.timeout(300)
def test_interpreter_allocates_a_20k_op_model():
    n = 20_000
    mb = ModelBuilder()
    x = first = mb.input("x", (1, 8), np.float32)
    for i in range(n):
        y = mb.tensor(f"y{i}", (1, 8), np.float32)
        mb.op("RELU", [x], [y])
        x = y
    mb.output(x)
    it = gpulite.Interpreter(model_content=mb.build())
    it.allocate_tensors()
    value = np.arange(-4, 4, dtype=np.float32).reshape(1, 8)
    it.set_tensor(first, value)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), np.maximum(value, 0))


# --- decoding bombs: FlexBuffer custom options ------------------------------------------------
_VECTOR_OF_VECTORS = (10 << 2) | 2  # packed type: untyped VECTOR, children 32-bit wide


def _shared_reference_flexbuffer(levels: int, fanout: int) -> bytes:
    """A FlexBuffer whose root vector holds ``fanout`` references to one vector, which holds
    ``fanout`` references to one vector, ... (``levels`` deep): fanout**levels values in a few KB."""
    buf = bytearray(struct.pack("<I", 2))
    target = len(buf)
    buf += struct.pack("<ii", 1, 2) + bytes([(1 << 2) | 2] * 2)  # innermost: a vector of two ints
    for _ in range(levels):
        buf += struct.pack("<I", fanout)
        start = len(buf)
        for k in range(fanout):
            buf += struct.pack("<I", start + 4 * k - target)  # each element points back at ``target``
        buf += bytes([_VECTOR_OF_VECTORS] * fanout)
        target = start
    root = len(buf)
    return bytes(buf + struct.pack("<I", root - target) + bytes([_VECTOR_OF_VECTORS, 4]))


def _custom_op_model(code: str, options: bytes) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 3), np.float32)
    m = mb.input("m", (1, 4, 4), np.float32)
    y = mb.tensor("y", (1, 4, 4, 3), np.float32)
    mb.custom_op(code, [x, m], [y], custom_options=options, op_version=2)
    mb.output(y)
    return mb.build()


@pytest.mark.timeout(60)
def test_flexbuffer_of_shared_references_is_refused():
    bomb = _shared_reference_flexbuffer(levels=25, fanout=10)  # 10**25 values
    assert len(bomb) < 2000
    with pytest.raises(ModelError, match=r"operator 0.*TransformTensorBilinear custom options: expected a FlexBuffer "
                                         r"map of at most \d+ values, got more"):
        gpulite.Interpreter(model_content=_custom_op_model("TransformTensorBilinear", bomb))


@pytest.mark.timeout(60)
def test_deeply_nested_flexbuffer_is_refused():
    deep = _shared_reference_flexbuffer(levels=200, fanout=1)
    with pytest.raises(ModelError, match="nested at most 32 levels deep"):
        gpulite.Interpreter(model_content=_custom_op_model("TransformTensorBilinear", deep))


def test_ordinary_flexbuffer_options_still_decode():
    from flatbuffers import flexbuffers

    options = bytes(flexbuffers.Dumps({"output_height": 4, "output_width": 4}))
    it = gpulite.Interpreter(model_content=_custom_op_model("TransformTensorBilinear", options))
    assert it.graph.nodes[0].options.output_height == 4


# --- decoding bombs: YAML graph configs, bounded messages ------------------------------------
def _yaml_alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"node: [{{calculator: Nowhere, options: *a{levels - 1}}}]"])


@pytest.mark.timeout(60)
def test_yaml_alias_bomb_is_refused():
    bomb = _yaml_alias_bomb()  # 9**9 strings with the aliases expanded
    assert len(bomb) < 600
    with pytest.raises(GraphConfigError, match=r"expected at most \d+ YAML nodes with aliases expanded") as info:
        parse_yaml(bomb)
    assert len(str(info.value)) < 300
    with pytest.raises(GraphConfigError, match="alias refers to a node that contains it"):
        parse_yaml("node: &n [{calculator: X, options: *n}]")


def test_yaml_aliases_within_the_budget_still_work():
    cfg = parse_yaml('input_stream: &s "x"\noutput_stream: "y"\n'
                     'node: [{calculator: TestScale, input_stream: "IN:x", output_stream: "OUT:y"}]\n'
                     'input_side_packet: *s\n')
    assert cfg.input_streams == ["x"] and cfg.side_packet_names == ["x"]


@pytest.mark.timeout(60)
def test_error_messages_quote_bounded_values():
    huge = "[" + ", ".join(["[" + ", ".join(['"' + "v" * 50 + '"'] * 50) + "]"] * 50) + "]"
    for text in (f"node: [{{calculator: {huge}}}]", f"node: [{huge}]", f"input_stream: {{a: {huge}}}",
                 f"node: [{{calculator: X, input_stream_handler: {huge}}}]", f"max_queue_size: {huge}"):
        with pytest.raises(GraphConfigError) as info:
            parse_yaml(text)
        assert len(str(info.value)) < 600, str(info.value)[:1000]
    assert len(brief("x" * 10**6)) <= 200 and len(brief([[list(range(100))] * 100] * 100)) <= 200


# --- corrupt media, and errors that drain the graph ------------------------------------------
def _write_clip(path: Path, frames: int = 12) -> list[tuple[int, int]]:
    """An MPEG-4 clip of intra frames; returns each packet's (byte position, size)."""
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream("mpeg4", rate=10)
        s.width = s.height = 64
        s.pix_fmt = "yuv420p"
        s.codec_context.gop_size = 1
        for i in range(frames):
            img = np.zeros((64, 64, 3), np.uint8)
            img[..., 0] = 20 * i
            img[8:24, 8 + 3 * i:24 + 3 * i] = 255
            for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    with av.open(str(path)) as c:
        return [(p.pos, p.size) for p in c.demux(c.streams.video[0]) if p.size]


def _decodable_frames(path: Path) -> int:
    """Frames PyAV decodes when each undecodable packet is skipped (the oracle)."""
    import av

    n = 0
    with av.open(str(path)) as c:
        for p in c.demux(c.streams.video[0]):
            try:
                n += len(p.decode())
            except av.error.InvalidDataError:
                pass
    return n


def _frames_in(path: Path) -> int:
    import av

    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


class SlowCopy(Calculator):
    """Passes frames on slowly, so several are in flight when the source ends or fails."""

    inputs: ClassVar = {"IN": np.ndarray}
    outputs: ClassVar = {"OUT": np.ndarray}

    def process(self, cc) -> None:
        import time

        time.sleep(0.02)
        cc.output("OUT", cc.inputs["IN"])


@pytest.mark.timeout(120)
def test_video_corrupt_in_the_middle_writes_every_decodable_frame(tmp_path, caplog):
    pytest.importorskip("av")
    clean, corrupt, out = tmp_path / "clean.mp4", tmp_path / "corrupt.mp4", tmp_path / "out.mp4"
    packets = _write_clip(clean)
    data = bytearray(clean.read_bytes())
    for pos, size in packets[4:6]:  # two whole packets in the middle become garbage
        data[pos:pos + size] = b"\xff" * size
    corrupt.write_bytes(bytes(data))
    expected = _decodable_frames(corrupt)
    assert expected == len(packets) - 2

    b = GraphBuilder()
    b.node("VideoFileSource", outputs={"IMAGE": "frames"}, options={"path": str(corrupt)})
    b.node(SlowCopy, inputs={"IN": "frames"}, outputs={"OUT": "copied"})
    b.node("VideoWriterSink", inputs={"IMAGE": "copied"}, options={"path": str(out), "fps": 10})
    g = b.build()
    g.start()
    g.wait_until_done(timeout=60)
    assert _frames_in(out) == expected
    assert "skipped 2 undecodable packet(s)" in caplog.text

    with VideoReader(corrupt) as r:
        assert len(list(r)) == expected and r.skipped == 2


class FailingSource(Calculator):
    """Emits ``count`` frames, then raises; records its close."""

    outputs: ClassVar = {"IMAGE": np.ndarray}
    closed: ClassVar[list[int]] = []

    def open(self, cc) -> None:
        self.sent = 0

    def process(self, cc) -> None:
        if self.sent == 6:
            raise OSError("the disk went away")
        cc.output("IMAGE", np.full((32, 32, 3), 30 * self.sent, np.uint8), timestamp=self.sent)
        self.sent += 1

    def close(self, cc) -> None:
        FailingSource.closed.append(self.sent)


class Collect(Calculator):
    inputs: ClassVar = {"IN": Any}
    got: ClassVar[list[int]] = []
    closed_after: ClassVar[list[int]] = []

    def process(self, cc) -> None:
        Collect.got.append(cc.timestamp)

    def close(self, cc) -> None:
        Collect.closed_after.append(len(Collect.got))


@pytest.mark.timeout(120)
def test_source_error_drains_the_graph_before_sinks_close(tmp_path):
    pytest.importorskip("av")
    FailingSource.closed, Collect.got, Collect.closed_after = [], [], []
    out = tmp_path / "out.mp4"
    b = GraphBuilder()
    b.node(FailingSource, outputs={"IMAGE": "frames"}, name="camera")
    b.node(SlowCopy, inputs={"IN": "frames"}, outputs={"OUT": "copied"})
    b.node("VideoWriterSink", inputs={"IMAGE": "copied"}, options={"path": str(out), "fps": 10})
    b.node(Collect, inputs={"IN": "copied"})
    g = b.build()
    g.start()
    with pytest.raises(CalculatorError, match=r"node 'camera' \(FailingSource\) failed in process\(\) at timestamp 6: "
                                              r"OSError: the disk went away"):
        g.wait_until_done(timeout=60)
    assert FailingSource.closed == [6]
    assert Collect.got == list(range(6)) and Collect.closed_after == [6]
    assert _frames_in(out) == 6


@pytest.mark.timeout(60)
def test_video_writer_frames_survive_a_reader_round_trip(tmp_path):
    pytest.importorskip("av")
    with VideoWriter(tmp_path / "v.mp4", fps=10) as w:
        for k in range(3):
            w.write(np.full((16, 16, 3), 60 * k, np.uint8))
    with VideoReader(tmp_path / "v.mp4") as r:
        assert len(list(r)) == 3 and r.skipped == 0


# --- the Interpreter API (interpreter.py belongs to the core change) --------------------------
def _relu_model() -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (1, 4), np.float32)
    y = mb.tensor("y", (1, 4), np.float32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    return mb.build()


def test_get_tensor_refuses_a_float_index():
    it = gpulite.Interpreter(model_content=_relu_model())
    it.allocate_tensors()
    for bad in (0.9, 1.0, "0"):
        with pytest.raises((TypeError, ValueError), match="tensor index must be an int"):
            it.get_tensor(bad)
    it.get_tensor(np.int64(1))  # numpy integers are indices


def test_big_endian_input_is_taken_by_value():
    it = gpulite.Interpreter(model_content=_relu_model())
    it.allocate_tensors()
    it.set_tensor(0, np.array([[1, -2, 3, -4]], dtype=">f4"))
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(1), np.array([[1, 0, 3, 0]], np.float32))
