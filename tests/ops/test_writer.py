"""The .tflite writer and the op-suite harness themselves.

Every model the op suite relies on is written by ``gpulite.testing.tflite_writer``, so the
writer is checked against two independent readers: LiteRT (which runs what was written)
and ``gpulite.model.reader``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import zoo
from gpulite.errors import ModelError
from gpulite.graph.densify import densify
from gpulite.graph.ir import TensorInfo
from gpulite.model import schema_gen as sg
from gpulite.model import writer as tflite_writer
from gpulite.model.custom_options import TransformLandmarksOptions
from gpulite.model.reader import load
from gpulite.testing.tflite_writer import OP_OPTIONS, ModelBuilder, Quant, sparsify
from tests.assets import model_path
from tests.compare import assert_same
from tests.ops import harness
from tests.ops.conftest import base_name
from tests.ops.harness import check_op, run_litert

# A 4x8 matrix in 1x4 blocks with two empty blocks: DENSE rows, SPARSE_CSR block columns,
# dense block contents — the layout of the sparse face detector's weights.
SPARSE_DENSE = np.array([
    [1, 2, 3, 4, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 5, 0, 6, 7],
    [8, 0, 0, 9, 1, 1, 1, 1],
], np.float32)


def _every_feature_model(buffers_by_offset: bool) -> tuple[bytes, dict]:
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 3), np.int8, quant=(0.5, -3), shape_signature=(-1, 4, 4, 3))
    wq = rng.integers(-127, 128, (2, 3, 3, 3), dtype=np.int8)
    w_quant = Quant(scale=np.array([0.25, 0.125], np.float32), zero_point=np.array([0, 0], np.int64), axis=0)
    w = mb.const("w", wq, quant=w_quant)
    bias = mb.const("b", np.array([7, -9], np.int32), quant=Quant(scale=[0.125, 0.0625], zero_point=0, axis=0))
    y = mb.tensor("y", (1, 4, 4, 2), np.int8, quant=Quant(0.75, 1, min=[-10.0], max=[10.0]))
    mb.op("CONV_2D", [x, w, bias], [y], padding="SAME", stride_w=1, stride_h=2,
          fused_activation_function="RELU6", dilation_w_factor=2)
    values, sparsity = sparsify(SPARSE_DENSE, ["DENSE", "SPARSE_CSR", "DENSE"], block_shape=[4], block_map=[1])
    sp = mb.const("sparse", values, sparsity=sparsity, shape=SPARSE_DENSE.shape)
    dense = mb.tensor("dense", SPARSE_DENSE.shape, np.float32)
    mb.op("DENSIFY", [sp], [dense])
    z = mb.tensor("z", (1, 4, 4, 2), np.float32)
    mb.custom_op("TransformLandmarks", [y, -1, dense], [z], custom_options=b"\x00flex\xff")
    mb.output(z, dense)
    mb.metadata("min_runtime_version", b"1.5.0\0")
    mb.metadata("blob", bytes(range(256)))
    model = mb.build(signature=("serving_default", {"image": x}, {"out": z, "dense": dense}),
                     buffers_by_offset=buffers_by_offset)
    return model, {"wq": wq, "values": values, "sparsity": sparsity}


@pytest.mark.parametrize("by_offset", [False, True], ids=["inline", "by_offset"])
def test_every_feature_round_trips_through_reader(by_offset: bool) -> None:
    model, ref = _every_feature_model(by_offset)
    m = load(model)
    assert len(m.subgraphs) == 1
    g = m.subgraphs[0]
    names = [t.name for t in g.tensors]
    assert names == ["x", "w", "b", "y", "sparse", "dense", "z"]
    x, w, b, y, sp, _dense, _z = g.tensors
    assert g.inputs == (0,) and g.outputs == (6, 5)

    assert x.shape == (1, 4, 4, 3) and x.shape_signature == (-1, 4, 4, 3) and x.dtype == np.int8
    assert x.data is None
    np.testing.assert_array_equal(x.quantization.scale, [0.5])
    np.testing.assert_array_equal(x.quantization.zero_point, [-3])

    np.testing.assert_array_equal(w.data, ref["wq"])
    assert w.data.dtype == np.int8 and w.quantization.axis == 0
    np.testing.assert_array_equal(w.quantization.scale, np.array([0.25, 0.125], np.float32))
    np.testing.assert_array_equal(w.quantization.zero_point, [0, 0])
    np.testing.assert_array_equal(b.data, [7, -9])
    np.testing.assert_array_equal(b.quantization.scale, np.array([0.125, 0.0625], np.float32))
    np.testing.assert_array_equal(y.quant_min, [-10.0])
    np.testing.assert_array_equal(y.quant_max, [10.0])

    conv, dens, custom = g.operators
    assert conv.op == "CONV_2D" and conv.inputs == (0, 1, 2) and conv.outputs == (3,)
    assert conv.options == sg.Conv2DOptions(
        padding=sg.Padding.SAME, stride_w=1, stride_h=2, fused_activation_function=sg.ActivationFunctionType.RELU6,
        dilation_w_factor=2, dilation_h_factor=1,
    )
    assert dens.op == "DENSIFY" and dens.options == sg.DensifyOptions()
    assert custom.op == "TransformLandmarks" and custom.is_custom
    assert custom.inputs == (3, -1, 5) and custom.custom_options == b"\x00flex\xff"
    assert custom.options == TransformLandmarksOptions()  # decoded at load (it has no fields)

    # The sparse constant: stored values and encoding as written, and they densify back.
    np.testing.assert_array_equal(sp.data, ref["values"])
    assert sp.shape == SPARSE_DENSE.shape
    assert sp.sparsity.traversal_order == (0, 1, 2) and sp.sparsity.block_map == (1,)
    assert [d.format for d in sp.sparsity.dim_metadata] == [0, 1, 0]
    csr = sp.sparsity.dim_metadata[1]
    np.testing.assert_array_equal(csr.array_segments, ref["sparsity"]["dim_metadata"][1]["array_segments"])
    np.testing.assert_array_equal(csr.array_indices, ref["sparsity"]["dim_metadata"][1]["array_indices"])
    info = TensorInfo(sp.index, sp.name, sp.shape, sp.dtype, const=sp.data, sparsity=sp.sparsity)
    np.testing.assert_array_equal(densify(info), SPARSE_DENSE)

    assert bytes(m.metadata["min_runtime_version"]) == b"1.5.0\0"
    assert bytes(m.metadata["blob"]) == bytes(range(256))
    assert len(m.signatures) == 1
    sig = m.signatures[0]
    assert (sig.key, sig.subgraph_index, sig.inputs, sig.outputs) == ("serving_default", 0, {"image": 0},
                                                                     {"out": 6, "dense": 5})


@pytest.mark.parametrize("by_offset", [False, True], ids=["inline", "by_offset"])
def test_every_feature_model_passes_litert_verifier(by_offset: bool) -> None:
    from ai_edge_litert.interpreter import Interpreter

    model, _ = _every_feature_model(by_offset)
    it = Interpreter(model_content=model)  # verifies the FlatBuffer and builds the graph
    assert it.get_signature_list() == {"serving_default": {"inputs": ["image"], "outputs": ["dense", "out"]}}
    # The custom op is unknown to LiteRT, so the model loads but cannot be prepared.
    with pytest.raises(RuntimeError, match="unresolved custom op: TransformLandmarks"):
        it.allocate_tensors()


def test_buffers_by_offset_layout() -> None:
    from ai_edge_litert import schema_py_generated as s

    mb = ModelBuilder()
    a = mb.input("a", (3,), np.float32)
    c1 = mb.const("c1", np.array([1.0, 2.0, 3.0], np.float32))
    c2 = mb.const("c2", np.array([10.0, 20.0, 30.0], np.float32))
    t = mb.tensor("t", (3,), np.float32)
    y = mb.tensor("y", (3,), np.float32)
    mb.op("ADD", [a, c1], [t])
    mb.op("ADD", [t, c2], [y])
    mb.metadata("note", b"stays inline")
    mb.output(y)
    inline, model = mb.build(), mb.build(buffers_by_offset=True)
    root = s.Model.GetRootAs(model, 0)
    offsets = []
    for i in range(root.BuffersLength()):
        buf = root.Buffers(i)
        if buf.Offset() > 1:
            assert buf.DataLength() == 0  # the data lives only after the FlatBuffer
            assert buf.Offset() % 16 == 0
            offsets.append((buf.Offset(), buf.Size()))
    assert len(offsets) == 2
    assert offsets[-1][0] + offsets[-1][1] == len(model)  # the buffers are the file's tail
    start, size = offsets[0]
    assert np.frombuffer(model[start:start + size], np.float32).tolist() == [1.0, 2.0, 3.0]
    start, size = offsets[1]
    assert np.frombuffer(model[start:start + size], np.float32).tolist() == [10.0, 20.0, 30.0]
    assert bytes(load(model).metadata["note"]) == b"stays inline"
    x = np.array([0.5, -1.0, 4.0], np.float32)
    for m in (inline, model):
        assert_same(run_litert(m, [x])[0], x + np.float32([11.0, 22.0, 33.0]), rtol=0)


def _add_model(shape_a, shape_b, shape_y, activation: str | None) -> bytes:
    mb = ModelBuilder()
    a = mb.input("a", shape_a, np.float32)
    b = mb.input("b", shape_b, np.float32)
    y = mb.tensor("y", shape_y, np.float32)
    opts = {} if activation is None else {"fused_activation_function": activation}
    mb.op("ADD", [a, b], [y], **opts)
    mb.output(y)
    return mb.build(signature=("serving_default", {"a": a, "b": b}, {"y": y}))


ADD_CASES = {
    "same": ((2, 3, 4), (2, 3, 4), (2, 3, 4), None),
    "broadcast": ((1, 4, 4, 3), (3,), (1, 4, 4, 3), None),
    "relu6": ((2, 5), (2, 5), (2, 5), "RELU6"),
}


@pytest.mark.parametrize("case", ADD_CASES)
def test_litert_runs_written_add(case: str) -> None:
    sa, sb, sy, act = ADD_CASES[case]
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(sa) * 4).astype(np.float32)
    b = (rng.standard_normal(sb) * 4).astype(np.float32)
    want = a + b
    if act == "RELU6":
        want = np.clip(want, 0, 6)
    # Float32 addition is exactly rounded in numpy and in LiteRT: no tolerance needed.
    assert_same(run_litert(_add_model(sa, sb, sy, act), [a, b])[0], want, rtol=0)


@pytest.mark.parametrize("case", ADD_CASES)
def test_check_op_add(case: str, backend: str) -> None:
    sa, sb, sy, act = ADD_CASES[case]
    rng = np.random.default_rng(2)
    inputs = [(rng.standard_normal(s) * 4).astype(np.float32) for s in (sa, sb)]
    check_op(_add_model(sa, sb, sy, act), inputs, backend)


def test_per_channel_quant_in_litert() -> None:
    """LiteRT dequantizes a per-channel constant with the scales and axis as written."""
    q = np.array([[[-3, 0, 5]], [[100, -128, 127]]], np.int8)  # shape (2, 1, 3), channels on axis 2
    quant = Quant(scale=np.array([0.5, 0.25, 2.0], np.float32), zero_point=np.array([0, 0, 0], np.int64), axis=2)
    mb = ModelBuilder()
    x = mb.input("x", (2, 1, 3), np.float32)
    c = mb.const("c", q, quant=quant)
    d = mb.tensor("d", (2, 1, 3), np.float32)
    y = mb.tensor("y", (2, 1, 3), np.float32)
    mb.op("DEQUANTIZE", [c], [d])
    mb.op("ADD", [x, d], [y])
    mb.output(y)
    x0 = np.zeros((2, 1, 3), np.float32)
    want = (q.astype(np.float32) * quant.scale).astype(np.float32)
    assert_same(run_litert(mb.build(), [x0])[0], want, rtol=0)


def test_sparse_const_densified_by_litert() -> None:
    """LiteRT's DENSIFY reads back what sparsify() encoded: an oracle independent of gpulite."""
    for formats, block_shape, block_map in [
        (["DENSE", "SPARSE_CSR", "DENSE"], [4], [1]),
        (["DENSE", "SPARSE_CSR"], None, None),
        (["SPARSE_CSR", "SPARSE_CSR"], None, None),
        (["SPARSE_CSR", "SPARSE_CSR", "DENSE"], [4], [1]),
        ("uint8", None, None),
        ("uint16", None, None),
    ]:
        index_dtype = None
        if formats in ("uint8", "uint16"):  # Uint8Vector / Uint16Vector index arrays
            index_dtype, formats = np.dtype(formats), ["DENSE", "SPARSE_CSR"]
        values, sparsity = sparsify(SPARSE_DENSE, formats, block_shape=block_shape, block_map=block_map)
        if index_dtype is not None:
            for d in sparsity["dim_metadata"]:
                if d["format"] == "SPARSE_CSR":
                    d["array_segments"] = d["array_segments"].astype(index_dtype)
                    d["array_indices"] = d["array_indices"].astype(index_dtype)
        mb = ModelBuilder()
        x = mb.input("x", SPARSE_DENSE.shape, np.float32)
        sp = mb.const("sp", values, sparsity=sparsity, shape=SPARSE_DENSE.shape)
        d = mb.tensor("d", SPARSE_DENSE.shape, np.float32)
        y = mb.tensor("y", SPARSE_DENSE.shape, np.float32)
        mb.op("DENSIFY", [sp], [d])
        mb.op("ADD", [x, d], [y])
        mb.output(y)
        got = run_litert(mb.build(), [np.zeros_like(SPARSE_DENSE)])[0]
        assert_same(got, SPARSE_DENSE, rtol=0, what=f"formats {formats} indices {index_dtype}")
        if index_dtype is not None:
            csr = load(mb.build()).subgraphs[0].tensors[sp].sparsity.dim_metadata[1]
            np.testing.assert_array_equal(csr.array_indices, sparsity["dim_metadata"][1]["array_indices"])
    # Only CSR levels drop zeros: the all-dense-but-blocked encoding keeps every value.
    values, _ = sparsify(SPARSE_DENSE, ["DENSE", "SPARSE_CSR"])
    assert values.size == np.count_nonzero(SPARSE_DENSE)


def test_options_enums_by_name_and_int_agree() -> None:
    def build(**opts) -> object:
        mb = ModelBuilder()
        x = mb.input("x", (1, 4, 4, 2), np.float32)
        y = mb.tensor("y", (1, 2, 2, 2), np.float32)
        mb.op("MAX_POOL_2D", [x], [y], **opts)
        mb.output(y)
        return load(mb.build()).subgraphs[0].operators[0].options

    by_name = build(padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2,
                    fused_activation_function="RELU")
    by_int = build(padding=1, stride_w=2, stride_h=2, filter_width=2, filter_height=2, fused_activation_function=1)
    assert by_name == by_int == sg.Pool2DOptions(padding=1, stride_w=2, stride_h=2, filter_width=2,
                                                 filter_height=2, fused_activation_function=1)


def test_vector_string_and_float_options_round_trip() -> None:
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), np.float32)
    y = mb.tensor("y", (3, 2), np.float32)
    z = mb.tensor("z", (3, 2), np.float32)
    w = mb.tensor("w", (3, 2), np.float32)
    mb.op("RESHAPE", [x], [y], new_shape=[3, 2])
    mb.op("LEAKY_RELU", [y], [z], alpha=0.125)
    mb.op("STABLEHLO_COMPOSITE", [z], [w], name="my.composite", version=3, composite_attributes=[1, 2, 3])
    mb.output(w)
    ops = load(mb.build()).subgraphs[0].operators
    assert ops[0].options == sg.ReshapeOptions(new_shape=(3, 2))
    assert ops[1].options == sg.LeakyReluOptions(alpha=0.125)
    assert ops[2].options.name == "my.composite" and ops[2].options.version == 3
    assert ops[2].options.composite_attributes == (1, 2, 3)


def test_op_options_table_matches_real_models() -> None:
    """Every options table the MediaPipe models carry is the one OP_OPTIONS (Op.X.spec.options) picks."""
    files = [model_path(n) for n in zoo.NAMES]
    checked = set()
    for f in files:
        for op in load(f).subgraphs[0].operators:
            if op.options is not None and not op.op.is_custom:
                assert OP_OPTIONS[op.op][0] == type(op.options).__name__, (f.name, op.op)
                checked.add(op.op)
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "MEAN", "RESIZE_BILINEAR"} <= checked


def test_op_options_cover_every_table() -> None:
    tables = {t for t, _ in OP_OPTIONS.values()}
    every = (set(sg.BuiltinOptions.__members__) | set(sg.BuiltinOptions2.__members__)) - {"NONE"}
    assert tables == every
    for op, (table, union) in OP_OPTIONS.items():
        enum = sg.BuiltinOptions if union == 1 else sg.BuiltinOptions2
        assert table in enum.__members__, op
    for op in ("LOGISTIC", "TANH", "RELU", "PRELU", "CUSTOM"):
        assert op not in OP_OPTIONS


def _official_slots(table: str) -> tuple[int, dict[str, tuple[int, str]]]:
    """(StartObject's field count, {field: (slot, default)}) read from LiteRT's generated builder functions."""
    import inspect
    import re

    from ai_edge_litert import schema_py_generated as s

    count = int(re.search(r"StartObject\((\d+)\)", inspect.getsource(getattr(s, table + "Start")))[1])
    fields = {}
    for name in dir(s):
        if name.startswith(table + "Add"):
            m = re.search(r"Prepend\w*Slot\((\d+), .*, (\S+)\)\s*$", inspect.getsource(getattr(s, name)))
            field = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name[len(table) + 3:]).lower()
            fields[field] = (int(m[1]), m[2])
    return count, fields


def _default(value: object) -> str:
    return str(int(value)) if isinstance(value, (bool, int)) else repr(value)


def test_writer_slots_match_litert_schema() -> None:
    """The writer's table layouts (its own, and schema_gen's options tables) are LiteRT's: same
    slots, same defaults, same field counts, so it writes what the official builders would."""
    for table, (count, slots) in tflite_writer.SLOTS.items():
        want_count, want = _official_slots(table)
        assert count == want_count, table
        for field, (slot, kind, default) in slots.items():
            assert want[field][0] == slot, (table, field)
            assert kind == "off" or want[field][1] == _default(default), (table, field)
    for table, spec in sg.OPTIONS_FIELDS.items():
        want_count, want = _official_slots(table)
        assert max((f[1] for f in spec), default=-1) + 1 == want_count, table
        for field, slot, kind, default in spec:
            assert want[field][0] == slot, (table, field)
            if not kind.startswith("vec_") and kind != "str":
                assert float(want[field][1]) == float(default), (table, field)


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda mb, x, y: mb.op("ADD", [x, x], [y], padding="SAME"), TypeError, "has no option"),
    (lambda mb, x, y: mb.op("ADD", [x, x], [y], fused_activation_function="RELU7"), ValueError, "RELU7"),
    (lambda mb, x, y: mb.op("LOGISTIC", [x], [y], alpha=1.0), TypeError, "no options table"),
    (lambda mb, x, y: mb.op("NOT_AN_OP", [x], [y]), ValueError, "unknown builtin op"),
    (lambda mb, x, y: mb.op("ADD", [x, 99], [y]), IndexError, "99"),
    (lambda mb, x, y: mb.op("ADD", [x, x], [-1]), IndexError, "-1"),
    (lambda mb, x, y: mb.op("CUSTOM", [x], [y]), ValueError, "custom_op"),
    (lambda mb, x, y: mb.const("s", np.ones(3, np.float32), sparsity={}), ValueError, "shape="),
    (lambda mb, x, y: mb.tensor("t", (2,), np.str_), TypeError, "TensorType"),
    (lambda mb, x, y: mb.input("q", (2,), np.int8, quant=0.5), TypeError, "quant"),
])
def test_writer_rejects_bad_arguments(call, error, match) -> None:
    mb = ModelBuilder()
    x = mb.input("x", (2,), np.float32)
    y = mb.tensor("y", (2,), np.float32)
    with pytest.raises(error, match=match):
        call(mb, x, y)
    with pytest.raises(ValueError, match="zero points"):
        Quant(scale=[1.0, 2.0], zero_point=[0, 0, 0])


def test_options_invalid_enum_int_is_written_for_fuzzing() -> None:
    """Ints pass through unchecked so tests can write malformed models on purpose."""
    mb = ModelBuilder()
    x = mb.input("x", (2,), np.float32)
    y = mb.tensor("y", (2,), np.float32)
    mb.op("ADD", [x, x], [y], fused_activation_function=42)
    mb.output(y)
    assert load(mb.build()).subgraphs[0].operators[0].options.fused_activation_function == 42


def test_the_writer_needs_no_litert() -> None:
    """The runtime writes models for the litert backend, so the writer must not import ai-edge-litert."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['ai_edge_litert'] = None\n"
            "from tests.ops.test_writer import _add_model\n"
            "from gpulite.model.reader import load\n"
            "assert load(_add_model((2,), (2,), (2,), None)).subgraphs[0].operators[0].op == 'ADD'\n"
            "assert 'ai_edge_litert.schema_py_generated' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_reader_rejects_truncated_written_model() -> None:
    model = _add_model((2,), (2,), (2,), None)
    with pytest.raises(ModelError):
        load(model[: len(model) // 2])


# --- the comparison and harness can fail ---------------------------------------------------
def test_assert_same_checks_shape_dtype_and_values() -> None:
    a = np.array([1.0, 2.0, 3.0], np.float32)
    assert_same(a, a.copy())
    assert_same(a + np.float32(2e-5), a, rtol=1e-5)  # 2e-5 <= 1e-5 * max(1, 3)
    with pytest.raises(AssertionError, match="shape"):
        assert_same(a, a.reshape(3, 1))
    with pytest.raises(AssertionError, match="dtype"):
        assert_same(a, a.astype(np.float64))
    with pytest.raises(AssertionError, match=r"index \(1,\)"):
        assert_same(a + np.float32([0, 1e-3, 0]), a)
    with pytest.raises(AssertionError, match="NaN"):
        assert_same(np.array([np.nan], np.float32), np.array([1.0], np.float32))
    with pytest.raises(AssertionError, match="infinity"):
        assert_same(np.array([-np.inf], np.float32), np.array([np.inf], np.float32))
    assert_same(np.array([np.nan, np.inf], np.float32), np.array([np.nan, np.inf], np.float32))
    q = np.array([[-128, 5], [127, 0]], np.int8)
    assert_same(q, q.copy())
    with pytest.raises(AssertionError, match=r"index \(1, 0\)"):
        assert_same(q - np.array([[0, 1], [2, 0]], np.int8), q, int_tol=1)
    assert_same(q + np.array([[1, 0], [0, 0]], np.int8), q, int_tol=1)
    with pytest.raises(AssertionError, match="max"):
        assert_same(np.array([True]), np.array([False]))


def test_check_op_fails_when_gpulite_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _add_model((4,), (4,), (4,), None)
    inputs = [np.ones(4, np.float32), np.ones(4, np.float32)]
    real = harness.run_gpulite

    def off_by_a_bit(model: bytes, inputs, backend: str):
        return [o + np.float32(1e-3) for o in real(model, inputs, backend)]

    monkeypatch.setattr(harness, "run_gpulite", off_by_a_bit)
    with pytest.raises(AssertionError, match="output 0"):
        check_op(model, inputs, "cpu")


@pytest.mark.parametrize(("name", "backend_name", "want"), [
    ("test_conv2d[same-relu6-webgpu]", "webgpu", "test_conv2d[same-relu6]"),
    ("test_conv2d[cpu-same-relu6]", "cpu", "test_conv2d[same-relu6]"),
    ("test_add[cpu]", "cpu", "test_add"),
    ("test_pad[-1-cpu]", "cpu", "test_pad[-1]"),
])
def test_expected_failures_key(name: str, backend_name: str, want: str) -> None:
    class Item:
        pass

    item = Item()
    item.name = name
    assert base_name(item, backend_name) == want
