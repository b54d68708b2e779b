"""The op table (gpulite.model.opdefs): Op, kernel-name checks, custom ops, FusedActivation.

FusedActivation's ranges are checked against LiteRT on single-op models with every member
fused, float and 8-bit quantized; the rest are unit checks of the table itself.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import gpulite
from gpulite import Interpreter
from gpulite.backends.kernels import get_kernel, register_kernel, unregister_kernel
from gpulite.errors import ModelError, UnsupportedOpError
from gpulite.model import custom_options as co
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import CustomOp, FusedActivation, Op, declare_custom_op, op_named
from gpulite.model.reader import load
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op

ALL_ACTIVATIONS = [a.value for a in FusedActivation]


# =====================================================================================
# Op
# =====================================================================================
def test_every_builtin_code_round_trips() -> None:
    """Each schema BuiltinOperator is one Op member with the same name and code, both ways."""
    for name, code in sg.BuiltinOperator.__members__.items():
        op = Op.from_code(code)
        assert op is Op(name) and op.spec.code == code and op.value == name
        assert not op.is_custom
    builtins = [op for op in Op if op.spec.code != sg.BuiltinOperator.CUSTOM or op is Op.CUSTOM]
    assert len(builtins) == len(sg.BuiltinOperator)


def test_every_builtin_code_loads_as_its_op() -> None:
    """A model holding one operator per builtin code (one byte and int32 codes alike) reads
    back as those Op members, in order."""
    mb = ModelBuilder()
    x = mb.input("x", (1,), np.float32)
    names = [n for n in sg.BuiltinOperator.__members__ if n != "CUSTOM"]
    for i, name in enumerate(names):
        mb.op(name, [x], [mb.tensor(f"y{i}", (1,), np.float32)])
    ops = load(mb.build()).subgraphs[0].operators
    assert [o.op for o in ops] == [Op(n) for n in names]
    assert all(type(o.op) is Op for o in ops)


def test_op_prints_as_its_name() -> None:
    """A str enum: compares, hashes and formats as the bare name on every Python version."""
    assert str(Op.CONV_2D) == f"{Op.CONV_2D}" == "CONV_2D" and f"{Op.ADD:>5}" == "  ADD"
    assert Op.TransformLandmarks == "TransformLandmarks" and {"CONV_2D": 1}[Op.CONV_2D] == 1
    assert f"{FusedActivation.RELU6}" == "RELU6" and FusedActivation.RELU6 == "RELU6"


def test_op_spec_options_types() -> None:
    """The table names the options dataclass each op's node carries."""
    assert Op.CONV_2D.spec.options is sg.Conv2DOptions
    assert Op.MAX_POOL_2D.spec.options is Op.AVERAGE_POOL_2D.spec.options is sg.Pool2DOptions
    assert Op.MEAN.spec.options is sg.ReducerOptions and Op.RELU.spec.options is None
    assert Op.STABLEHLO_COMPOSITE.spec.options is sg.StableHLOCompositeOptions
    assert Op.Convolution2DTransposeBias.spec.options is co.TransposeConvBiasOptions
    assert Op.Convolution2DTransposeBias.is_custom and Op.MaxUnpooling2D.spec.decode is None
    for op in Op:
        assert op.spec.options is None or op.spec.options.__dataclass_params__.frozen, op


def test_nodes_carry_options_of_the_table_type() -> None:
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 2), np.float32)
    y = mb.tensor("y", (1, 2, 2, 2), np.float32)
    mb.op("MAX_POOL_2D", [x], [y], padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2,
          fused_activation_function="RELU6")
    mb.output(y)
    (node,) = Interpreter(model_content=mb.build()).graph.nodes
    assert node.op is Op.MAX_POOL_2D and isinstance(node.options, node.op.spec.options)
    assert node.activation is FusedActivation.RELU6


# =====================================================================================
# register_kernel and custom ops
# =====================================================================================
def test_register_kernel_rejects_an_unknown_op_name() -> None:
    with pytest.raises(ValueError, match=r"unknown op 'CONV2D'.*did you mean 'CONV_2D'"):
        register_kernel("CONV2D", "cpu", lambda node, ctx: None)
    with pytest.raises(ValueError, match=r"unknown op 'Conv2DTransposeBias'.*'Convolution2DTransposeBias'"):
        gpulite.register_kernel("Conv2DTransposeBias", "cpu", lambda node, ctx: None)
    with pytest.raises(ValueError, match=r"unknown op 'xyzzy'.*declare_custom_op$"):
        op_named("xyzzy")
    assert get_kernel(Op.ADD, "cpu") is get_kernel("ADD", "cpu") is not None


def _custom_model(name: str, options: bytes = b"") -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), np.float32)
    y = mb.tensor("y", (2, 3), np.float32)
    mb.custom_op(name, [x], [y], custom_options=options)
    mb.output(y)
    return mb.build()


def test_unknown_custom_op_loads_then_fails_at_allocate() -> None:
    it = Interpreter(model_content=_custom_model("NoSuchCustomOp", b"\x01\x02"))
    node = it.graph.nodes[0]
    assert node.op == CustomOp("NoSuchCustomOp") and node.op.is_custom and node.options is None
    assert node.custom_options == b"\x01\x02"
    with pytest.raises(UnsupportedOpError, match="op NoSuchCustomOp") as e:
        it.allocate_tensors()
    assert e.value.op == "NoSuchCustomOp"


def test_declared_custom_op_runs_with_its_options_decoded_at_load() -> None:
    """declare_custom_op: the reader runs its decoder once per node; the kernel reads node.options."""
    def decode(data: bytes | None) -> float:
        if data is None or len(data) != 4:
            raise ModelError(f"ScaleBy custom options: expected a 4-byte float, got {data!r}")
        return struct.unpack("<f", data)[0]

    name = gpulite.declare_custom_op("ScaleBy", decode)
    assert declare_custom_op("ScaleBy", decode) == name  # declaring again is harmless
    with pytest.raises(ValueError, match="already declared"):
        declare_custom_op("ScaleBy")
    with pytest.raises(ValueError, match="already an op gpulite defines"):
        declare_custom_op("CONV_2D")

    def scale_by(node, ctx):
        x, out, k = ctx.input(0), ctx.output(0), np.float32(node.options)
        return lambda: np.multiply(x, k, out=out)

    register_kernel(name, "cpu", scale_by)
    try:
        it = Interpreter(model_content=_custom_model("ScaleBy", struct.pack("<f", 2.5)), backend="cpu")
        assert it.graph.nodes[0].options == 2.5
        it.allocate_tensors()
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), x * np.float32(2.5))
        with pytest.raises(ModelError, match=r"operator 0 \(ScaleBy\): ScaleBy custom options"):
            Interpreter(model_content=_custom_model("ScaleBy", b"\x00"))
    finally:
        unregister_kernel(name, "cpu")


# =====================================================================================
# FusedActivation
# =====================================================================================
def test_fused_activation_codes_and_ranges() -> None:
    for name, code in sg.ActivationFunctionType.__members__.items():
        assert FusedActivation.from_code(code) is FusedActivation(name) and FusedActivation(name).code == code
    assert FusedActivation.from_code(99) is FusedActivation.NONE  # LiteRT's ConvertActivation default
    assert FusedActivation.RELU.clamp == (0.0, np.inf) and FusedActivation.RELU6.clamp == (0.0, 6.0)
    assert FusedActivation.RELU_N1_TO_1.clamp == (-1.0, 1.0)
    assert FusedActivation.NONE.clamp is FusedActivation.TANH.clamp is FusedActivation.SIGN_BIT.clamp is None
    assert not FusedActivation.NONE and FusedActivation.TANH
    assert FusedActivation.RELU.bounds(np.int32) == (0, np.iinfo(np.int32).max)
    assert FusedActivation.of_op(Op.RELU6) is FusedActivation.RELU6 and FusedActivation.of_op("TANH") is None


def test_quantized_bounds_as_tflite() -> None:
    """CalculateActivationRangeQuantized: float32 division, halves away from zero, dtype range."""
    relu6, n1 = FusedActivation.RELU6, FusedActivation.RELU_N1_TO_1
    assert relu6.quantized_bounds(0.48, 0, np.int8) == (0, 13)  # 6 / 0.48 = 12.5 -> 13
    assert relu6.quantized_bounds(0.04, -128, np.int8) == (-128, 22)
    assert n1.quantized_bounds(0.01, 10, np.uint8) == (0, 110)
    assert FusedActivation.RELU.quantized_bounds(0.1, -5, np.int16) == (-5, 32767)
    assert FusedActivation.NONE.quantized_bounds(0.1, 0, np.uint8) == (0, 255)
    assert FusedActivation.TANH.quantized_bounds(0.1, 0, np.int8) == (-128, 127)  # a no-op in TFLite's kernels


@pytest.mark.parametrize("act", ALL_ACTIVATIONS)
def test_every_fused_activation_on_float_conv_and_add(act: str, backend: str) -> None:
    """Each fused activation, TANH and SIGN_BIT included (LiteRT ignores those two), vs LiteRT."""
    rng = np.random.default_rng(30)
    mb = ModelBuilder()
    x = mb.input("x", (1, 5, 5, 3), np.float32)
    w = mb.const("w", rng.uniform(-2, 2, (4, 1, 1, 3)).astype(np.float32))
    b = mb.const("b", rng.uniform(-1, 1, (4,)).astype(np.float32))
    c = mb.tensor("c", (1, 5, 5, 4), np.float32)
    mb.op("CONV_2D", [x, w, b], [c], padding="VALID", stride_h=1, stride_w=1, fused_activation_function=act)
    r = mb.input("r", (1, 5, 5, 4), np.float32)
    y = mb.tensor("y", (1, 5, 5, 4), np.float32)
    mb.op("ADD", [c, r], [y], fused_activation_function=act)
    mb.output(y)
    inputs = [rng.uniform(-4, 4, (1, 5, 5, 3)).astype(np.float32), rng.uniform(-4, 4, (1, 5, 5, 4)).astype(np.float32)]
    check_op(mb.build(), inputs, backend)


@pytest.mark.parametrize("act", ALL_ACTIVATIONS)
def test_every_fused_activation_on_quantized_max_pool(act: str, backend: str) -> None:
    """int8 MAX_POOL_2D: the clamp quantized to the output's scale (an RELU6 bound on a tie)."""
    q = (0.48, -3)
    mb = ModelBuilder()
    x = mb.input("x", (1, 6, 6, 2), np.int8, quant=q)
    y = mb.tensor("y", (1, 3, 3, 2), np.int8, quant=q)
    mb.op("MAX_POOL_2D", [x], [y], padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2,
          fused_activation_function=act)
    mb.output(y)
    xs = np.random.default_rng(31).integers(-128, 128, (1, 6, 6, 2)).astype(np.int8)
    check_op(mb.build(), [xs], backend)
