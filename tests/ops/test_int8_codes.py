"""Ops whose LiteRT kernels take 8/16-bit quantized tensors and move, pick or combine their codes,
scales and zero points ignored (issue 23's audit, ai-edge-litert 2.3): each case feeds every 8-bit
code (a spread for int16), with output quantizations that differ from the input's where LiteRT
allows it, and checks the cpu's ``gpulite ops`` claim (``cpu_int8``) with LiteRT's outputs."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.backends import coverage
from gpulite.model.opdefs import Op
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op, run_litert
from tests.ops.single_op import C, In, _build, single_op

I8, U8, I16 = np.int8, np.uint8, np.int16
DTYPES = {"int8": I8, "uint8": U8, "int16": I16}
# (input quantization, another one for outputs and second inputs)
QUANT = {"int8": ((0.05, 3), (0.3, -100)), "uint8": ((0.05, 131), (0.02, 7)), "int16": ((0.002, 0), (0.0007, 0))}


# Ops whose WebGPU kernels run these nodes under quantized="exact" (the others: tests/ops/expected_failures.py)
GPU_CODES = (Op.FILL, Op.CAST)


def codes(name: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Every code of an 8-bit dtype (shuffled, repeated to fill ``shape``); a spread with the extremes for int16."""
    dt = DTYPES[name]
    info = np.iinfo(dt)
    n = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    if info.bits == 8:
        v = np.resize(rng.permutation(np.arange(info.min, info.max + 1)), n)
    else:
        v = rng.integers(info.min, info.max + 1, n)
        v[:2] = (info.min, info.max)[:n]
    return v.astype(dt).reshape(shape)


def refused_everywhere(model: bytes, match: str) -> None:
    """``allocate_tensors`` raises UnsupportedOpError on cpu and, where an adapter exists, on webgpu
    under both ``quantized`` modes (the float rewrite must not compute what LiteRT refuses)."""
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError
    from tests.webgpu.support import adapter_problem

    options = [{"backend": "cpu"}]
    if adapter_problem() is None:
        options += [{"backend": "webgpu", "quantized": mode} for mode in ("float", "exact")]
    for kw in options:
        with pytest.raises(UnsupportedOpError, match=match):
            Interpreter(model_content=model, **kw).allocate_tensors()


def check(op: Op, model: bytes, feeds: list[np.ndarray], backend: str) -> None:
    r = coverage.row(op)
    assert r.cpu_int8 == "yes", f"gpulite ops does not list {op.value} as running int8 on cpu"
    assert backend != "webgpu" or r.webgpu_exact == "yes" or op not in GPU_CODES, r
    check_op(model, feeds, backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_topk_v2_quantized(dt: str, backend: str) -> None:
    x = codes(dt, (8, 32) if dt != "int16" else (4, 50))
    q = QUANT[dt][0]
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, DTYPES[dt], quant=q)
    v, i = mb.tensor("v", (x.shape[0], 5), DTYPES[dt], quant=q), mb.tensor("i", (x.shape[0], 5), np.int32)
    mb.op("TOPK_V2", [xi, mb.const("k", np.array(5, np.int32))], [v, i])
    mb.output(v, i)
    check(Op.TOPK_V2, mb.build(), [x], backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_matrix_diag_quantized(dt: str, backend: str) -> None:
    """The diagonal's codes, code 0 (not the zero point) elsewhere."""
    qi, qo = QUANT[dt]
    check(Op.MATRIX_DIAG, *single_op("MATRIX_DIAG", [In(codes(dt, (4, 64)), qi)], out_quant=qo), backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_matrix_set_diag_quantized(dt: str, backend: str) -> None:
    qi, qo = QUANT[dt]
    ins = [In(codes(dt, (4, 8, 8)), qi), In(codes(dt, (4, 8), 1), qo)]
    check(Op.MATRIX_SET_DIAG, *single_op("MATRIX_SET_DIAG", ins, out_quant=qo), backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_fill_quantized_every_code(dt: str, backend: str) -> None:
    """One interpreter each, invoked once per code of the value (uint8 was refused before)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter

    qi = QUANT[dt][0]
    mb = ModelBuilder()
    v = mb.input("v", (), DTYPES[dt], quant=qi)
    y = mb.tensor("y", (2, 3), DTYPES[dt], quant=qi)
    mb.op("FILL", [mb.const("d", np.array([2, 3], np.int32)), v], [y])
    mb.output(y)
    m = mb.build()
    assert coverage.row(Op.FILL).cpu_int8 == "yes" and coverage.row(Op.FILL).webgpu_exact == "yes"
    values = codes(dt, (256,))
    outs = []
    for it in (LiteRT(model_content=m), Interpreter(model_content=m, backend=backend)):
        it.allocate_tensors()
        got = []
        for c in values:
            it.set_tensor(it.get_input_details()[0]["index"], np.array(c, DTYPES[dt]))
            it.invoke()
            got.append(np.array(it.get_tensor(it.get_output_details()[0]["index"]), copy=True))
        outs.append(np.stack(got))
    np.testing.assert_array_equal(outs[1], outs[0])
    assert outs[0].dtype == DTYPES[dt] and len(np.unique(outs[0])) == len(np.unique(values))


FILL_REFUSED = {"scale": ("int8", (0.05, 3), (0.06, 3)), "zero-point": ("uint8", (0.05, 131), (0.05, 130)),
                "int16-zero-point": ("int16", (0.002, 4), (0.002, 4))}


@pytest.mark.parametrize("case", list(FILL_REFUSED))
def test_fill_quantized_refusals(case: str) -> None:
    """LiteRT's Prepare: the output keeps the value's scale and zero point (0 for int16)."""
    from gpulite import Interpreter
    from gpulite.errors import UnsupportedOpError

    dt, qv, qo = FILL_REFUSED[case]
    m, feeds = single_op("FILL", [C(np.array([2, 3], np.int32)), In(np.array(5, DTYPES[dt]), qv)], out_quant=qo,
                         out_dtype=DTYPES[dt],
                         out_shape=(2, 3))
    with pytest.raises(RuntimeError, match=r"fill\.cc"):
        run_litert(m, feeds)
    with pytest.raises(UnsupportedOpError, match="share scale and zero point"):
        Interpreter(model_content=m, backend="cpu").allocate_tensors()


@pytest.mark.parametrize("dt", ["int8", "uint8"])  # LiteRT's scatter_nd refuses int16 updates
def test_scatter_nd_quantized(dt: str, backend: str) -> None:
    """Code 0 where nothing lands; duplicates add their codes, wrapping as LiteRT's 8-bit sums."""
    qi, qo = QUANT[dt]
    idx = np.array([[i % 7, (i * 3) % 5] for i in range(64)], np.int32)
    upd = codes(dt, (64, 4))
    ins = [In(idx), In(upd, qi), C(np.array([8, 5, 4], np.int32))]
    check(Op.SCATTER_ND, *single_op("SCATTER_ND", ins, out_dtype=DTYPES[dt], out_quant=qo), backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_dynamic_update_slice_quantized(dt: str, backend: str) -> None:
    qi = QUANT[dt][0]
    ins = [In(codes(dt, (16, 16)), qi), In(codes(dt, (5, 7), 1), qi), In(np.array([3, 12], np.int32))]
    check(Op.DYNAMIC_UPDATE_SLICE, *single_op("DYNAMIC_UPDATE_SLICE", ins), backend)


@pytest.mark.parametrize("dt", ["int8", "uint8"])  # LiteRT's sparse_to_dense refuses int16 values
def test_sparse_to_dense_quantized(dt: str, backend: str) -> None:
    qi, qo = QUANT[dt]
    flat = np.random.default_rng(3).permutation(20 * 16)[:256]
    idx = np.sort(flat).astype(np.int32)
    ins = [C(np.stack([idx // 16, idx % 16], 1).astype(np.int32)), C(np.array([20, 16], np.int32)),
           In(codes(dt, (256,)), qi), In(np.array(codes(dt, (1,), 2)[0]), qi)]
    m, feeds = single_op("SPARSE_TO_DENSE", ins, out_dtype=DTYPES[dt], out_quant=qo, validate_indices=True)
    check(Op.SPARSE_TO_DENSE, m, feeds, backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_dilate_quantized(dt: str, backend: str) -> None:
    qi = QUANT[dt][0]
    x = codes(dt, (16, 16))
    ins = [In(x, qi), C(np.array([2, 3], np.int32)), C(np.array(codes(dt, (1,), 4)[0]), qi)]
    check(Op.DILATE, *single_op("DILATE", ins), backend)


@pytest.mark.parametrize("dt", ["uint8", "int16"])  # LiteRT's reverse_sequence refuses int8
def test_reverse_sequence_quantized(dt: str, backend: str) -> None:
    qi = QUANT[dt][0]
    ins = [In(codes(dt, (4, 64)), qi), In(np.array([0, 1, 37, 64], np.int32))]
    check(Op.REVERSE_SEQUENCE, *single_op("REVERSE_SEQUENCE", ins, seq_dim=1, batch_dim=0), backend)


@pytest.mark.parametrize("fn", ["ADD", "MUL", "MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_reduce_window_quantized(dt: str, fn: str, backend: str) -> None:
    """Sums and products of the codes wrap in the dtype, as LiteRT's."""
    qi = QUANT[dt][0]
    window = [np.array(v, np.int64) for v in ([2, 3], [1, 2], [1, 1])]
    ins = [In(codes(dt, (16, 17)), qi), In(np.array(codes(dt, (1,), 5)[0]), qi), *map(C, window)]
    check(Op.REDUCE_WINDOW, *single_op("REDUCE_WINDOW", ins, reduce_function=fn), backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_hashtable_lookup_quantized(dt: str, backend: str) -> None:
    qi = QUANT[dt][0]
    ids = np.array([3, 4, 21, -7, 5, 9, 1, 100, 7], np.int32)
    keys = np.array([-7, 0, 3, 5, 8, 20, 21, 30], np.int32)
    mb = ModelBuilder()
    x = mb.input("ids", ids.shape, np.int32)
    out, hits = mb.tensor("out", (len(ids), 32), DTYPES[dt], quant=qi), mb.tensor("hits", (len(ids),), np.uint8)
    mb.op("HASHTABLE_LOOKUP", [x, mb.const("keys", keys), mb.const("values", codes(dt, (8, 32)), quant=qi)],
          [out, hits])
    mb.output(out, hits)
    check(Op.HASHTABLE_LOOKUP, mb.build(), [ids], backend)


@pytest.mark.parametrize("to", ["float32", "int32", "int8"])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_cast_quantized_casts_codes(dt: str, to: str, backend: str) -> None:
    """LiteRT's CAST converts the codes, not the real values."""
    x = codes(dt, (4, 64))
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, DTYPES[dt], quant=QUANT[dt][0])
    y = mb.tensor("y", x.shape, to, quant=QUANT["int8"][1] if to == "int8" else None)
    mb.op("CAST", [xi], [y])
    mb.output(y)
    check(Op.CAST, mb.build(), [x], backend)


@pytest.mark.parametrize("op", [Op.RIGHT_SHIFT, Op.BITWISE_XOR])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_bit_ops_quantized(op: Op, dt: str, backend: str) -> None:
    """Every code against every shift (0 to past the width; refused before: "unquantized dtype")."""
    qi, qo = QUANT[dt]
    x = codes(dt, (1, 256))
    bits = np.iinfo(DTYPES[dt]).bits
    other = (np.arange(-1, bits + 2) if op == Op.RIGHT_SHIFT else codes(dt, (18,), 6).astype(np.int64))
    if DTYPES[dt] == U8:
        other = np.abs(other)
    other = np.resize(other, 18).astype(DTYPES[dt]).reshape(18, 1)
    m, feeds = single_op(op.value, [In(x, qi), In(other, qo)], out_quant=qo, out_shape=(18, 256))
    check(op, m, feeds, backend)


# Ops whose LiteRT kernels refuse int8, uint8 and int16 inputs alike: ``gpulite ops`` marks their
# int8 columns n/a (coverage.LITERT_FLOAT_ONLY). CONTROL: the same model in a dtype LiteRT runs
CONTROL = ("float32", "bool")


def _refusal_case(op: Op, dt: str) -> bytes:
    q = QUANT.get(dt, (None,))[0]
    x = np.zeros((1, 4, 4, 4), dt if dt in CONTROL else DTYPES[dt])
    ins: list = [In(x, q)]
    opts: dict = {}
    shape = x.shape
    if op in (Op.POW, Op.ADD_N, Op.ATAN2):
        ins.append(In(x, q))
    elif op == Op.CUMSUM:
        ins.append(C(np.array(1, np.int32)))
    elif op == Op.SEGMENT_SUM:
        ins.append(C(np.zeros(1, np.int32)))
    elif op.value.startswith("UNSORTED_SEGMENT"):
        ins += [C(np.zeros((1, 4), np.int32)), C(np.array(1, np.int32))]
        shape = (1, 4, 4)
    elif op == Op.BUCKETIZE:
        opts = {"boundaries": [0.0, 1.0]}
    elif op == Op.LOCAL_RESPONSE_NORMALIZATION:
        opts = {"radius": 1, "bias": 1.0, "alpha": 1.0, "beta": 0.5}
    elif op == Op.L2_POOL_2D:
        opts = {"padding": "VALID", "stride_h": 1, "stride_w": 1, "filter_height": 2, "filter_width": 2}
        shape = (1, 3, 3, 4)
    elif op == Op.CONV_3D:
        ins = [In(np.zeros((1, 2, 4, 4, 4), x.dtype), q), C(np.ones((1, 1, 1, 4, 2), x.dtype), q), None]
        opts = {"padding": "VALID", "stride_d": 1, "stride_h": 1, "stride_w": 1, "dilation_d_factor": 1,
                "dilation_h_factor": 1, "dilation_w_factor": 1}
        shape = (1, 2, 4, 4, 2)
    elif op in (Op.REDUCE_ANY, Op.REDUCE_ALL):
        ins.append(C(np.array([1], np.int32)))
        shape = (1, 4, 4)
    elif op == Op.CONV_3D_TRANSPOSE:
        ins = [C(np.array([1, 2, 4, 4, 2], np.int32)), C(np.ones((1, 1, 1, 2, 4), x.dtype), q),
               In(np.zeros((1, 2, 4, 4, 4), x.dtype), q)]
        opts, shape = {"padding": "VALID", "stride_d": 1, "stride_h": 1, "stride_w": 1}, (1, 2, 4, 4, 2)
    out_dtype = np.int32 if op == Op.BUCKETIZE else x.dtype
    return _build(op.value, ins, shape, out_dtype, None if op == Op.BUCKETIZE else q, opts)


def _other_refusal_case(op: Op, dt: str) -> tuple[bytes, list[np.ndarray]]:
    """RFFT2D, NON_MAX_SUPPRESSION_V4 / V5, MULTINOMIAL, RANDOM_*: 8/16-bit quantized where LiteRT wants float32."""
    q, t = QUANT.get(dt, (None,))[0], np.dtype(dt if dt in CONTROL else DTYPES[dt])
    mb = ModelBuilder()
    if op == Op.RFFT2D:
        x = mb.input("x", (4, 4), t, quant=q)
        outs = [mb.tensor("y", (4, 3), np.complex64)]
        mb.op("RFFT2D", [x, mb.const("n", np.array([4, 4], np.int32))], outs)
        feeds = [np.zeros((4, 4), t)]
    elif op in (Op.NON_MAX_SUPPRESSION_V4, Op.NON_MAX_SUPPRESSION_V5):
        b, sc = mb.input("boxes", (3, 4), t, quant=q), mb.input("scores", (3,), t, quant=q)
        ins = [b, sc, mb.const("n", np.array(2, np.int32)), mb.const("iou", np.array(0.5, np.float32)),
               mb.const("thr", np.array(0.0, np.float32))]
        outs = [mb.tensor("idx", (2,), np.int32), mb.tensor("count", (), np.int32)]
        if op == Op.NON_MAX_SUPPRESSION_V5:
            ins.append(mb.const("sigma", np.array(0.5, np.float32)))
            outs.insert(1, mb.tensor("kept", (2,), t, quant=q))
        mb.op(op.value, ins, outs)
        feeds = [np.zeros((3, 4), t), np.zeros(3, t)]
    elif op == Op.MULTINOMIAL:
        x = mb.input("logits", (2, 4), t, quant=q)
        outs = [mb.tensor("y", (2, 3), np.int32)]
        mb.op("MULTINOMIAL", [x, mb.const("n", np.array(3, np.int32))], outs, seed=1, seed2=2)
        feeds = [np.zeros((2, 4), t)]
    else:  # RANDOM_UNIFORM / RANDOM_STANDARD_NORMAL into a quantized output
        x = mb.input("x", (1,), np.float32)
        outs = [mb.tensor("y", (2, 3), t, quant=q), mb.tensor("z", (1,), np.float32)]
        mb.op(op.value, [mb.const("shape", np.array([2, 3], np.int32))], outs[:1], seed=1, seed2=2)
        mb.op("ADD", [x, x], outs[1:])
        feeds = [np.zeros(1, np.float32)]
    mb.output(*outs)
    return mb.build(), feeds


_OTHER = (Op.RFFT2D, Op.NON_MAX_SUPPRESSION_V4, Op.NON_MAX_SUPPRESSION_V5, Op.MULTINOMIAL, Op.RANDOM_UNIFORM,
          Op.RANDOM_STANDARD_NORMAL)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("op", sorted(coverage.LITERT_FLOAT_ONLY, key=str), ids=str)
def test_litert_refuses_8_and_16_bit(op: Op, dt: str) -> None:
    """The audit behind the n/a marks: LiteRT fails such a model at allocate or invoke."""
    r = coverage.row(op)
    assert (r.cpu_int8, r.webgpu_int8, r.webgpu_exact) == ("n/a", "n/a", "n/a"), r
    control = "bool" if op in (Op.REDUCE_ANY, Op.REDUCE_ALL) else "float32"
    for d in (control, dt):  # the control runs: the refusal is the dtype's
        if op in _OTHER:
            m, feeds = _other_refusal_case(op, d)
        else:
            m = _refusal_case(op, d)
            big = op in (Op.CONV_3D, Op.CONV_3D_TRANSPOSE)
            feeds = [np.zeros((1, 2, 4, 4, 4) if big else (1, 4, 4, 4), d if d in CONTROL else DTYPES[d])]
            feeds += [feeds[0]] * (op in (Op.POW, Op.ADD_N, Op.ATAN2))
        if d == control:
            run_litert(m, feeds)
            continue
        with pytest.raises((RuntimeError, ValueError)):
            run_litert(m, feeds)
        refused_everywhere(m, f"is quantized {dt}; LiteRT's kernel refuses")


def _refused_dtype_case(case: str) -> tuple[bytes, list[np.ndarray]]:
    q16, q8 = QUANT["int16"], QUANT["int8"]
    if case == "REVERSE_SEQUENCE-int8":
        x, n = codes("int8", (4, 64)), np.array([0, 1, 37, 64], np.int32)
        return _build("REVERSE_SEQUENCE", [In(x, q8[0]), In(n)], x.shape, I8, q8[0], {"seq_dim": 1, "batch_dim": 0}), [
            x, n]
    if case == "SCATTER_ND-int16":
        idx, upd = np.array([[0], [2]], np.int32), codes("int16", (2, 4))
        return _build("SCATTER_ND", [In(idx), In(upd, q16[0]), C(np.array([3, 4], np.int32))], (3, 4), I16, q16[0],
                      {}), [idx, upd]
    if case == "SPARSE_TO_DENSE-int16":
        v, d = codes("int16", (2,)), np.array(5, I16)
        ins = [C(np.array([[0], [2]], np.int32)), C(np.array([4], np.int32)), In(v, q16[0]), In(d, q16[0])]
        return _build("SPARSE_TO_DENSE", ins, (4,), I16, q16[0], {"validate_indices": True}), [v, d]
    op = case.split("-")[0]  # REDUCE_MAX / REDUCE_MIN, int16, output quantized otherwise
    x = codes("int16", (4, 50))
    return _build(op, [In(x, q16[0]), C(np.array([1], np.int32))], (4,), I16, q16[1], {"keep_dims": False}), [x]


REFUSED_DTYPES = {"REVERSE_SEQUENCE-int8": "is quantized int8", "SCATTER_ND-int16": "is quantized int16",
                  "SPARSE_TO_DENSE-int16": "is quantized int16",
                  "REDUCE_MAX-int16-requantized": "quantized differently",
                  "REDUCE_MIN-int16-requantized": "quantized differently"}


@pytest.mark.parametrize("case", list(REFUSED_DTYPES))
def test_quantized_dtypes_litert_refuses(case: str) -> None:
    """LiteRT refuses these (the 8-bit REDUCE_MAX / MIN across quantizations run, in XNNPACK:
    tests/ops/test_reduce.py; the uint8 / int16 REVERSE_SEQUENCE and 8-bit SCATTER_ND and
    SPARSE_TO_DENSE above); gpulite refuses them at allocate on every backend."""
    m, feeds = _refused_dtype_case(case)
    with pytest.raises(RuntimeError, match=r"not supported|values->type|params\.scale"):
        run_litert(m, feeds)
    refused_everywhere(m, REFUSED_DTYPES[case])


@pytest.mark.parametrize("dt", list(DTYPES))
def test_bitcast_quantized(dt: str, backend: str) -> None:
    """The codes' bytes reinterpreted (to uint8 bytes, or int16 pairs of 8-bit codes)."""
    x = codes(dt, (4, 64))
    to, shape = (U8, (4, 64, 2)) if dt == "int16" else (I16, (4, 32))
    if dt != "int16":
        x = x.reshape(4, 32, 2)
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, DTYPES[dt], quant=QUANT[dt][0])
    y = mb.tensor("y", shape, to)
    mb.op("BITCAST", [xi], [y])
    mb.output(y)
    check(Op.BITCAST, mb.build(), [x], backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_while_carries_quantized_tensors(dt: str, backend: str) -> None:
    """``while i < 3: i + 1, maximum(x, m)`` with x quantized: the loop moves the codes."""
    q, shape = QUANT[dt][0], (4, 64)
    x = codes(dt, shape)
    mb = ModelBuilder()
    i, xi = mb.input("i", (), np.int32), mb.input("x", shape, DTYPES[dt], quant=q)
    outs = [mb.tensor("i_out", (), np.int32), mb.tensor("x_out", shape, DTYPES[dt], quant=q)]
    cond = mb.subgraph("cond")
    ci = cond.input("i", (), np.int32)
    cond.input("x", shape, DTYPES[dt], quant=q)
    flag = cond.tensor("flag", (), np.bool_)
    cond.op("LESS", [ci, cond.const("limit", np.array(3, np.int32))], [flag])
    cond.output(flag)
    body = mb.subgraph("body")
    bi, bx = body.input("i", (), np.int32), body.input("x", shape, DTYPES[dt], quant=q)
    ni, nx = body.tensor("i1", (), np.int32), body.tensor("x1", shape, DTYPES[dt], quant=q)
    body.op("ADD", [bi, body.const("one", np.array(1, np.int32))], [ni])
    body.op("MAXIMUM", [bx, body.const("m", codes(dt, shape, 7), quant=q)], [nx])
    body.output(ni, nx)
    mb.op("WHILE", [i, xi], outs, cond_subgraph_index=1, body_subgraph_index=2)
    mb.output(*outs)
    assert coverage.row(Op.WHILE).cpu_int8 == "yes"
    check_op(mb.build(), [np.array(0, np.int32), x], backend)


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_if_carries_quantized_tensors(dt: str, flag: bool, backend: str) -> None:
    """``maximum(x, y) if flag else minimum(x, y)`` on quantized tensors."""
    q, shape = QUANT[dt][0], (4, 64)
    mb = ModelBuilder()
    f = mb.input("flag", (1,), np.bool_)
    xs = [mb.input(n, shape, DTYPES[dt], quant=q) for n in ("x", "y")]
    out = mb.tensor("out", shape, DTYPES[dt], quant=q)
    for name, op in (("then", "MAXIMUM"), ("else", "MINIMUM")):
        sub = mb.subgraph(name)
        a, b = (sub.input(n, shape, DTYPES[dt], quant=q) for n in ("x", "y"))
        r = sub.tensor("r", shape, DTYPES[dt], quant=q)
        sub.op(op, [a, b], [r])
        sub.output(r)
    mb.op("IF", [f, *xs], [out], then_subgraph_index=1, else_subgraph_index=2)
    mb.output(out)
    assert coverage.row(Op.IF).cpu_int8 == "yes"
    check_op(mb.build(), [np.array([flag]), codes(dt, shape), codes(dt, shape, 1)], backend)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_resource_variable_holds_quantized_codes(dt: str, backend: str) -> None:
    """ASSIGN_VARIABLE then READ_VARIABLE of a quantized tensor gives back its codes."""
    q = QUANT[dt][0]
    x = codes(dt, (4, 64))
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, DTYPES[dt], quant=q)
    h, v = mb.tensor("h", (), "RESOURCE"), mb.tensor("v", x.shape, DTYPES[dt], quant=q)
    mb.op("VAR_HANDLE", [], [h], shared_name="v")
    mb.op("ASSIGN_VARIABLE", [h, xi], [])
    mb.op("READ_VARIABLE", [h], [v])
    mb.output(v)
    assert coverage.row(Op.ASSIGN_VARIABLE).cpu_int8 == "yes"
    check(Op.READ_VARIABLE, mb.build(), [x], backend)


SAME_QUANT_CASES = {  # op -> (input shape, constant inputs, output shape, options)
    "EXPAND_DIMS": ((1, 4, 4, 8), [np.array(0, np.int32)], (1, 1, 4, 4, 8), {}),
    "MIRROR_PAD": ((1, 4, 4, 8), [np.array([[0, 0], [1, 1], [0, 0], [0, 0]], np.int32)], (1, 6, 4, 8),
                   {"mode": "REFLECT"}),
    "BATCH_TO_SPACE_ND": ((4, 1, 4, 8), [np.array([2, 2], np.int32), np.zeros((2, 2), np.int32)], (1, 2, 8, 8), {}),
    "SPACE_TO_BATCH_ND": ((1, 4, 4, 8), [np.array([2, 2], np.int32), np.zeros((2, 2), np.int32)], (4, 2, 2, 8), {}),
}


@pytest.mark.parametrize("differ", ["scale", "zero-point"])
@pytest.mark.parametrize("op", list(SAME_QUANT_CASES))
def test_code_moves_refuse_another_output_quantization(op: str, differ: str) -> None:
    """LiteRT's Prepare refuses an output quantized otherwise than the input (it copies codes and
    cannot rescale); so does gpulite, at allocate, rather than returning codes on another grid
    (webgpu's float rewrite computed MIRROR_PAD and the batch ops in float)."""
    shape, consts, out_shape, options = SAME_QUANT_CASES[op]
    qo = (0.1, 3) if differ == "scale" else (0.05, -7)
    m = _build(op, [In(np.zeros(shape, I8), (0.05, 3)), *map(C, consts)], out_shape, I8, qo, options)
    with pytest.raises(RuntimeError, match="params"):
        run_litert(m, [np.zeros(shape, I8)])
    refused_everywhere(m, "quantized differently")
