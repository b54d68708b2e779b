"""Model structure is checked against the op table (issue 14): arity, omitted inputs, dtypes,
constness, constants written by a node, and int32 limits on shapes, each a typed error naming
the node, the op and what was expected; LiteRT (ai-edge-litert) is the oracle where it runs."""

from __future__ import annotations

import flatbuffers
import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter as LiteRT

from gpulite import Interpreter, ModelError, ShapeError, UnsupportedOpError
from gpulite.backends.kernels import get_kernels_for_backend
from gpulite.model.opdefs import Op
from gpulite.testing.tflite_writer import ModelBuilder

F32 = np.float32


def _litert_refuses(data: bytes) -> None:
    """LiteRT refuses the same file (at load or allocate): gpulite's error is not over-strict."""
    with pytest.raises((RuntimeError, ValueError)):
        it = LiteRT(model_content=data)
        it.allocate_tensors()


def _add(n_inputs: int) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (2, 2), F32)
    y = mb.tensor("y", (2, 2), F32)
    mb.op("ADD", [x] * n_inputs, [y])
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_add_with_the_wrong_number_of_inputs(n, backend):
    data = _add(n)
    it = Interpreter(model_content=data, backend=backend)
    with pytest.raises(ModelError, match=rf"node 0 \(ADD\) has {n} inputs \[.*\]; ADD takes 2$"):
        it.allocate_tensors()
    _litert_refuses(data)


def _single(op: str, inputs: list, out_shape=(1, 4, 4, 2), **options) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 3), F32)
    ins = [x if isinstance(v, str) else -1 if v is None else mb.const(f"c{k}", v) for k, v in enumerate(inputs)]
    y = mb.tensor("y", out_shape, F32)
    mb.op(op, ins, [y], **options)
    mb.output(y)
    return mb.build()


CONV = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
W = np.ones((2, 1, 1, 3), F32)


@pytest.mark.parametrize(("op", "inputs", "options", "expected"), [
    ("RELU", [], {}, "RELU takes 1$"),
    ("FULLY_CONNECTED", ["x"], {}, "FULLY_CONNECTED takes 2 to 3$"),
    ("CONV_2D", ["x"], CONV, "CONV_2D takes 2 to 3$"),
    ("CONV_2D", ["x", W, np.zeros(2, F32), np.zeros(2, F32)], CONV, "CONV_2D takes 2 to 3$"),
    ("CONV_2D", ["x", None], CONV, r"input 1 is omitted \(-1\), but CONV_2D needs it"),
], ids=["relu-0", "fc-1", "conv-1", "conv-4", "conv-no-filter"])
def test_too_few_or_too_many_inputs_is_a_model_error(op, inputs, options, expected):
    data = _single(op, inputs, **options)
    it = Interpreter(model_content=data, backend="cpu")
    with pytest.raises(ModelError, match=rf"node 0 \({op}\).*{expected}"):
        it.allocate_tensors()
    _litert_refuses(data)


def test_an_omitted_optional_bias_still_runs():
    it = Interpreter(model_content=_single("CONV_2D", ["x", W, None], **CONV), backend="cpu")
    it.allocate_tensors()
    it.set_tensor(0, np.ones((1, 4, 4, 3), F32))
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), np.full((1, 4, 4, 2), 3, F32))


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_a_node_writing_a_constant_is_a_model_error(backend):
    mb = ModelBuilder()
    x = mb.input("x", (2, 2), F32)
    c = mb.const("c", np.ones((2, 2), F32))
    mb.op("ADD", [x, x], [c])
    mb.output(c)
    data = mb.build()
    it = Interpreter(model_content=data, backend=backend)
    with pytest.raises(ModelError, match=r"node 0 \(ADD\) writes tensor 1 \('c'\), which is a constant"):
        it.allocate_tensors()
    _litert_refuses(data)


def test_an_index_input_must_be_an_integer():
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), F32)
    shape = mb.const("shape", np.array([3, 2], F32))
    y = mb.tensor("y", (3, 2), F32)
    mb.op("RESHAPE", [x, shape], [y])
    mb.output(y)
    data = mb.build()
    with pytest.raises(ModelError, match=r"node 0 \(RESHAPE\): input 1 \(tensor 1 \('shape'\)\) is float32; "
                                         "expected int32 or int64"):
        Interpreter(model_content=data, backend="cpu").allocate_tensors()
    _litert_refuses(data)


def test_a_run_time_value_where_the_kernels_need_a_constant_is_unsupported():
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), F32)
    perm = mb.input("perm", (2,), np.int32)
    y = mb.tensor("y", (3, 2), F32)
    mb.op("TRANSPOSE", [x, perm], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build(), backend="cpu")
    with pytest.raises(UnsupportedOpError, match=r"op TRANSPOSE \(node 0\).*input 1 \(tensor 1 \('perm'\)\) is "
                                                 "computed at run time; gpulite's kernels need it constant"):
        it.allocate_tensors()


def _relu_with_shape(shape) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (2, 2), F32)
    y = mb.tensor("y", (2, 2), F32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    m = schema.ModelT.InitFromPackedBuf(mb.build(), 0)
    for t in m.subgraphs[0].tensors:
        t.shape = list(shape)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize(("shape", "why"), [
    ((-1, -1), r"dimension -1 is outside \[0, 2147483647\]"),
    ((0, 2**31 - 1, 2**31 - 1), "its dimensions multiply to more than 2147483647 elements"),
    ((2**16, 2**16), "its dimensions multiply to more than 2147483647 elements"),
])
def test_shapes_beyond_int32_are_model_errors(shape, why):
    with pytest.raises(ModelError, match=rf"tensor 0 \('x'\): shape \[.*\] is not a tensor's shape: {why}"):
        Interpreter(model_content=_relu_with_shape(shape))


def _relu_model() -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 128, 3), F32)
    y = mb.tensor("y", (1, 4, 128, 3), F32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
def test_resize_to_a_zero_dimension_runs_as_litert_does(backend):
    outs = []
    for it in (LiteRT(model_content=_relu_model()), Interpreter(model_content=_relu_model(), backend=backend)):
        it.resize_tensor_input(0, [1, 0, 128, 3])
        it.allocate_tensors()
        it.set_tensor(0, np.zeros((1, 0, 128, 3), F32))
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    assert outs[0].shape == outs[1].shape == (1, 0, 128, 3)


@pytest.mark.parametrize(("size", "why"), [
    ([1, 2**40, 1, 1], r"dimension 1099511627776 is outside \[0, 2147483647\]"),
    ([1, 2**20, 2**20, 3], "its dimensions multiply to more than 2147483647 elements"),
])
def test_resize_beyond_int32_is_a_shape_error(size, why):
    it = Interpreter(model_content=_relu_model())
    with pytest.raises(ShapeError, match=rf"cannot resize tensor 0 to \[.*\]: {why}"):
        it.resize_tensor_input(0, size)


# --- the table -------------------------------------------------------------------------------
# Every op with a cpu kernel on main when the table was written has an entry (the numbers from
# TFLite's lite/kernels/*.cc Prepare and MediaPipe's custom ops); a later op without one is
# checked for written constants only.
COVERED = {
    "ADD", "ARG_MAX", "ARG_MIN", "AVERAGE_POOL_2D", "BATCH_MATMUL", "CONCATENATION", "CONV_2D",
    "Convolution2DTransposeBias", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE", "DEQUANTIZE", "DIV", "EXP", "EXPAND_DIMS",
    "FULLY_CONNECTED", "GATHER", "HARD_SWISH", "LEAKY_RELU", "LOGISTIC", "Landmarks2TransformMatrix", "MAXIMUM",
    "MAX_POOL_2D", "MEAN", "MINIMUM", "MUL", "PAD", "PADV2", "PRELU", "QUANTIZE", "REDUCE_MAX", "REDUCE_MIN", "RELU",
    "RELU6", "RELU_N1_TO_1", "RESHAPE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "RSQRT", "SLICE", "SOFTMAX",
    "SPACE_TO_DEPTH", "SQRT", "SQUARED_DIFFERENCE", "SQUEEZE", "STRIDED_SLICE", "SUB", "SUM", "TANH", "TRANSPOSE",
    "TRANSPOSE_CONV", "TransformLandmarks", "TransformTensorBilinear", "ZEROS_LIKE",
    "ABS", "NEG", "SQUARE", "RELU_0_TO_1",  # webgpu-only kernels
}


@pytest.mark.parametrize("name", sorted(COVERED))
def test_every_kernel_op_has_operands(name):
    assert Op(name).spec.operands is not None


def test_the_covered_list_holds_the_kernel_ops_it_was_written_for():
    kernels = {str(op) for b in ("cpu", "webgpu") for op in get_kernels_for_backend(b)}
    assert len(COVERED & kernels) >= 57


def test_an_op_without_an_entry_is_not_checked():
    assert Op.LSH_PROJECTION.spec.operands is None


# --- found by the structured fuzz ---------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpu", "webgpu"])
@pytest.mark.parametrize("then_conv", [False, True], ids=["pad", "pad-conv"])
def test_pad_with_a_third_input_pads_with_it_as_litert_does(backend, then_conv):
    """LiteRT runs PAD and PADV2 through one Prepare: PAD's optional third input is the pad value.
    gpulite's PAD ignored it (and fused such a PAD into a conv as a zero pad)."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 3, 3, 2), F32)
    p = mb.tensor("p", (1, 5, 5, 2), F32)
    mb.op("PAD", [x, mb.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32)),
                  mb.const("value", np.array(7.0, F32))], [p])
    y = p
    if then_conv:
        y = mb.tensor("y", (1, 3, 3, 1), F32)
        mb.op("CONV_2D", [p, mb.const("w", np.ones((1, 3, 3, 2), F32)), mb.const("b", np.zeros(1, F32))], [y],
              padding="VALID", stride_w=1, stride_h=1)
    mb.output(y)
    data = mb.build()
    value = np.arange(18, dtype=F32).reshape(1, 3, 3, 2)
    outs = []
    for it in (LiteRT(model_content=data), Interpreter(model_content=data, backend=backend)):
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], value)
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
    assert outs[0].max() > 100 if then_conv else outs[0][0, 0, 0, 0] == 7.0
