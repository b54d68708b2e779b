"""WHILE and IF (models with several subgraphs, written with ``ModelBuilder.subgraph``) against
LiteRT, and the malformed or unsupported ones refused as they should be."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ModelError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op

F32, I32 = np.float32, np.int32


def while_model(limit: int = 5, *, shape=(2, 3), cond_index: int = 1, body_shape=None) -> bytes:
    """``i, x, w -> while i < limit: i + 1, x * w + 0.25``; ``w`` a constant of the main graph the body
    passes through unchanged (folded into the body as a constant)."""
    mb = ModelBuilder()
    i = mb.input("i", (), I32)
    x = mb.input("x", shape, F32)
    w = mb.const("w", np.linspace(0.5, 1.5, int(np.prod(shape)), dtype=F32).reshape(shape))
    outs = [mb.tensor("i_out", (), I32), mb.tensor("x_out", shape, F32), mb.tensor("w_out", shape, F32)]
    cond = mb.subgraph("cond")
    ci = cond.input("i", (), I32)
    cond.input("x", shape, F32)
    cond.input("w", shape, F32)
    lim, flag = cond.const("limit", np.array(limit, I32)), cond.tensor("flag", (), np.bool_)
    cond.op("LESS", [ci, lim], [flag])
    cond.output(flag)
    body = mb.subgraph("body")
    bi, bx, bw = body.input("i", (), I32), body.input("x", shape, F32), body.input("w", shape, F32)
    one, quarter = body.const("one", np.array(1, I32)), body.const("quarter", np.array(0.25, F32))
    ni, xw, nx = body.tensor("i1", (), I32), body.tensor("xw", shape, F32), body.tensor("x1", shape, F32)
    body.op("ADD", [bi, one], [ni])
    body.op("MUL", [bx, bw], [xw])
    body.op("ADD", [xw, quarter], [nx])
    if body_shape is not None:  # a body whose x comes out in another shape
        flat = body.tensor("flat", body_shape, F32)
        body.op("RESHAPE", [nx, body.const("flat_shape", np.array(body_shape, I32))], [flat])
        nx = flat
    body.output(ni, nx, bw)
    mb.op("WHILE", [i, x, w], outs, cond_subgraph_index=cond_index, body_subgraph_index=2)
    mb.output(outs[0], outs[1])
    return mb.build()


@pytest.mark.parametrize("start", [0, 3, 9])
def test_while_loop(start: int, backend: str) -> None:
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3)).astype(F32)
    check_op(while_model(), [np.array(start, I32), x], backend)


def if_model() -> bytes:
    """``flag, x -> relu(x @ w) if flag else tanh(x @ w) * 2``, ``w`` a constant of the main graph."""
    mb = ModelBuilder()
    flag, x = mb.input("flag", (1,), np.bool_), mb.input("x", (1, 4), F32)
    w = mb.const("w", np.random.default_rng(1).standard_normal((3, 4)).astype(F32))
    y = mb.tensor("y", (1, 3), F32)
    for name in ("then", "else"):
        sub = mb.subgraph(name)
        sw, sx = sub.input("w", (3, 4), F32), sub.input("x", (1, 4), F32)
        h, out = sub.tensor("h", (1, 3), F32), sub.tensor("out", (1, 3), F32)
        sub.op("FULLY_CONNECTED", [sx, sw, -1], [h])
        if name == "then":
            sub.op("RELU", [h], [out])
        else:
            t, two = sub.tensor("t", (1, 3), F32), sub.const("two", np.array(2.0, F32))
            sub.op("TANH", [h], [t])
            sub.op("MUL", [t, two], [out])
        sub.output(out)
    mb.op("IF", [flag, w, x], [y], then_subgraph_index=1, else_subgraph_index=2)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("flag", [True, False])
def test_if(flag: bool, backend: str) -> None:
    x = np.random.default_rng(2).uniform(-1, 1, (1, 4)).astype(F32)
    check_op(if_model(), [np.array([flag]), x], backend)


def _allocate(model: bytes) -> None:
    Interpreter(model_content=model).allocate_tensors()


def test_while_naming_a_missing_subgraph_is_a_model_error() -> None:
    with pytest.raises(ModelError, match=r"node 0 \(WHILE\): cond_subgraph_index is 7, but the model has 3"):
        _allocate(while_model(cond_index=7))


def test_while_calling_itself_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="calls itself"):
        _allocate(while_model(cond_index=0))


def test_while_with_mismatched_subgraph_is_a_model_error() -> None:
    # the body named as cond: three outputs where one bool is expected
    with pytest.raises(ModelError, match=r"cond subgraph 2 \('body'\) has 3 inputs and 3 outputs; expected 3 and 1"):
        _allocate(while_model(cond_index=2))


def test_loop_value_changing_shape_is_refused() -> None:
    with pytest.raises(UnsupportedOpError, match=r"WHILE \(node 0\).*body subgraph 'body' has output 1 of shape "
                                                 r"\[6\].*static shapes"):
        _allocate(while_model(body_shape=(6,)))


def stateful_model(*, init: bool = True) -> bytes:
    """``x -> v += x; return v * 2`` with ``v`` a resource variable a CALL_ONCE subgraph sets to a
    constant (``init=False``: no CALL_ONCE, so the first read finds nothing assigned)."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 3), F32)
    if init:
        sub = mb.subgraph("init")
        h0 = sub.tensor("h", (), "RESOURCE")
        sub.op("VAR_HANDLE", [], [h0], shared_name="v")
        sub.op("ASSIGN_VARIABLE", [h0, sub.const("v0", np.array([[0.5, -1.0, 2.0]], F32))], [])
        mb.op("CALL_ONCE", [], [], init_subgraph_index=1)
    h = mb.tensor("h", (), "RESOURCE")
    v, s, v2, y = (mb.tensor(n, (1, 3), F32) for n in ("v", "s", "v2", "y"))
    mb.op("VAR_HANDLE", [], [h], shared_name="v")
    mb.op("READ_VARIABLE", [h], [v])
    mb.op("ADD", [v, x], [s])
    mb.op("ASSIGN_VARIABLE", [h, s], [])
    mb.op("READ_VARIABLE", [h], [v2])
    mb.op("MUL", [v2, mb.const("two", np.array(2.0, F32))], [y])
    mb.output(y)
    return mb.build()


def test_call_once_and_resource_variables(backend: str) -> None:
    check_op(stateful_model(), [np.array([[1.0, 2.0, -3.0]], F32)], backend)


def test_resource_variable_keeps_its_value_across_invokes() -> None:
    it = Interpreter(model_content=stateful_model())
    it.allocate_tensors()
    x, got = np.array([[1.0, 2.0, -3.0]], F32), []
    for _ in range(3):
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        got.append(it.get_tensor(it.get_output_details()[0]["index"]))
    np.testing.assert_array_equal(got, [2 * (np.array([[0.5, -1.0, 2.0]]) + k * x) for k in (1, 2, 3)])


def test_reading_an_unassigned_variable_is_a_model_error() -> None:
    it = Interpreter(model_content=stateful_model(init=False))
    it.allocate_tensors()
    with pytest.raises(ModelError, match=r"READ_VARIABLE\) reads resource variable 'v' before anything assigned it"):
        it.invoke()


def list_write_model(steps: int = 4) -> bytes:
    """A loop writing ``2 * x[i]`` into row ``i`` of a list the way TensorFlow's TensorListSetItem
    converts (SLICE head and tail whose shapes change every step, CONCATENATION)."""
    row_shape, shape = (1, 1, 3), (steps, 1, 3)
    mb = ModelBuilder()
    x = mb.input("x", shape, F32)
    i0, empty = mb.const("i0", np.array(0, I32)), mb.const("empty", np.zeros(shape, F32))
    outs = [mb.tensor("i_out", (), I32), mb.tensor("list_out", shape, F32), mb.tensor("x_out", shape, F32)]
    cond = mb.subgraph("cond")
    ci = cond.input("i", (), I32)
    cond.input("list", shape, F32)
    cond.input("x", shape, F32)
    flag = cond.tensor("flag", (), np.bool_)
    cond.op("LESS", [ci, cond.const("steps", np.array(steps, I32))], [flag])
    cond.output(flag)
    body = mb.subgraph("body")
    bi, bl, bx = body.input("i", (), I32), body.input("list", shape, F32), body.input("x", shape, F32)
    one = body.const("one", np.array([1], I32))
    i1, i_vec, i1_vec = body.tensor("i1", (), I32), body.tensor("i_vec", (1,), I32), body.tensor("i1_vec", (1,), I32)
    body.op("ADD", [bi, body.const("step", np.array(1, I32))], [i1])
    body.op("RESHAPE", [bi, one], [i_vec])
    body.op("RESHAPE", [i1, one], [i1_vec])
    size, begin = body.tensor("head_size", (3,), I32), body.tensor("tail_begin", (3,), I32)
    body.op("CONCATENATION", [i_vec, body.const("rest", np.array([-1, -1], I32))], [size], axis=0)
    body.op("CONCATENATION", [i1_vec, body.const("zeros", np.array([0, 0], I32))], [begin], axis=0)
    picked, row = body.tensor("picked", (1, 3), F32), body.tensor("row", row_shape, F32)
    body.op("GATHER", [bx, bi], [picked], axis=0)
    doubled = body.tensor("doubled", (1, 3), F32)
    body.op("MUL", [picked, body.const("two", np.array(2.0, F32))], [doubled])
    body.op("RESHAPE", [doubled, body.const("row_shape", np.array(row_shape, I32))], [row])
    # shapes that vary at run time, stored as the converter stores them
    head = body.tensor("head", row_shape, F32, shape_signature=(-1, -1, -1))
    tail = body.tensor("tail", row_shape, F32, shape_signature=(-1, 1, 3))
    body.op("SLICE", [bl, body.const("origin", np.zeros(3, I32)), size], [head])
    body.op("SLICE", [bl, begin, body.const("to_end", np.full(3, -1, I32))], [tail])
    new = body.tensor("new", shape, F32)
    body.op("CONCATENATION", [head, row, tail], [new], axis=0)
    body.output(i1, new, bx)
    mb.op("WHILE", [i0, empty, x], outs, cond_subgraph_index=1, body_subgraph_index=2)
    mb.output(outs[1])
    return mb.build()


def test_list_write_becomes_dynamic_update_slice() -> None:
    body = Interpreter(model_content=list_write_model()).graph.subgraphs[2]
    ops = [str(n.op) for n in body.nodes]
    assert "DYNAMIC_UPDATE_SLICE" in ops and "SLICE" not in ops and ops.count("CONCATENATION") == 2, ops


def test_list_write_loop() -> None:
    x = np.random.default_rng(3).uniform(-1, 1, (4, 1, 3)).astype(F32)
    check_op(list_write_model(), [x], "cpu")
