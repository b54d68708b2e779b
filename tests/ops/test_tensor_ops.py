"""TOPK_V2, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, SCATTER_ND, MATRIX_DIAG and
MATRIX_SET_DIAG against LiteRT."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder, Quant
from tests.ops.harness import check_op
from tests.ops.single_op import C, In, single_op


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


def _topk_model(shape, dtype, k: int, index_dtype=np.int32) -> bytes:
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype)
    out_shape = (*shape[:-1], k)
    values, indices = mb.tensor("values", out_shape, dtype), mb.tensor("indices", out_shape, index_dtype)
    mb.op("TOPK_V2", [x, mb.const("k", np.array(k, np.int32))], [values, indices])
    mb.output(values, indices)
    return mb.build()


# (input shape, dtype, k, values drawn from few levels so ties are common)
TOPK_CASES = {"float": ((3, 17), np.float32, 5, False), "float-ties": ((4, 20), np.float32, 7, True),
              "k1": ((2, 3, 9), np.float32, 1, True), "all": ((6,), np.float32, 6, True),
              "int8": ((5, 12), np.int8, 4, True), "uint8": ((5, 12), np.uint8, 3, True),
              "int32": ((2, 30), np.int32, 10, True), "int64": ((3, 8), np.int64, 8, True)}


@pytest.mark.parametrize("case", list(TOPK_CASES))
def test_topk_v2(case: str, backend: str) -> None:
    shape, dtype, k, tied = TOPK_CASES[case]
    rng = _rng("topk", case)
    if np.dtype(dtype).kind == "f":
        x = (rng.integers(-3, 4, shape) if tied else rng.standard_normal(shape)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.choice(np.array([info.min, -1, 0, 1, info.max], np.int64)[int(info.min == 0):], shape).astype(dtype)
    check_op(_topk_model(shape, dtype, k), [x], backend)


@pytest.mark.parametrize("shape", [(4, 8), (1, 3, 5, 16), (7,)])
def test_l2_normalization(shape, backend: str) -> None:
    x = _rng("l2", shape).standard_normal(shape).astype(np.float32)
    if len(shape) > 1:
        x[..., 0, :] = 0  # a zero row and a tiny one: the norm's 1e-6 floor
        x[..., 1, :] *= 1e-9
    check_op(*single_op("L2_NORMALIZATION", [In(x)]), backend)


@pytest.mark.parametrize(("radius", "bias", "alpha", "beta"), [
    (0, 1.0, 1.0, 0.5), (2, 1.0, 0.5, 0.75), (5, 2.0, 1e-4, 0.75), (3, 0.5, 2.0, 1.0), (1, 1.0, 0.1, 0.3)])
def test_local_response_normalization(radius: int, bias: float, alpha: float, beta: float, backend: str) -> None:
    x = (_rng("lrn", radius, beta).standard_normal((1, 4, 5, 12)) * 2).astype(np.float32)
    check_op(*single_op("LOCAL_RESPONSE_NORMALIZATION", [In(x)], radius=radius, bias=bias, alpha=alpha,
                        beta=beta), backend)


# (indices, updates shape suffix, output shape, dtype)
SCATTER_CASES = {
    "elements": ([[0, 1], [2, 3], [0, 1], [1, 0]], (), (3, 4), np.float32),  # a duplicate: accumulates
    "rows": ([[1], [3], [1]], (5,), (4, 5), np.int32),
    "slices-3d": ([[0, 2], [1, 0]], (6,), (2, 3, 6), np.float32),
    "int64-updates": ([[4], [0]], (), (6,), np.int64),
    "bool": ([[0, 0], [1, 1], [0, 0]], (), (2, 2), np.bool_),
    "int8": ([[1, 2, 0], [0, 0, 1]], (), (2, 3, 2), np.int8),
    # many duplicates of mixed magnitudes: a float sum in another order rounds differently
    "float-duplicates-in-order": ([[i % 3, (i * 7) % 5] for i in range(60)], (3,), (3, 5, 3), np.float32),
    "int32-duplicates-wrap": ([[1], [0], [1], [1]], (2,), (3, 2), np.int32),
    # 2,500 rows: three dispatches on webgpu, each carrying the sum on from the last
    "float-many-rows": ([[i % 7, (i * 5) % 4] for i in range(2500)], (), (7, 4), np.float32),
}


@pytest.mark.parametrize("case", list(SCATTER_CASES))
def test_scatter_nd(case: str, backend: str) -> None:
    indices, suffix, shape, dtype = SCATTER_CASES[case]
    idx = np.array(indices, np.int32)  # LiteRT's scatter_nd takes int32 indices only
    rng = _rng("scatter", case)
    upd_shape = (*idx.shape[:-1], *suffix)
    upd = (rng.random(upd_shape) > 0.4) if dtype == np.bool_ else rng.integers(-9, 10, upd_shape).astype(dtype)
    if dtype == np.float32:
        upd = (rng.standard_normal(upd_shape) * 10.0 ** rng.integers(-4, 5, upd_shape)).astype(dtype)
    if case == "int32-duplicates-wrap":
        upd = np.full(upd_shape, 2**30 + 12345, np.int32)
    check_op(*single_op("SCATTER_ND", [In(idx), In(upd), C(np.array(shape, np.int32))], out_dtype=dtype),
             backend)


def test_scatter_nd_constant_indices(backend: str) -> None:
    """Indices known at load (checked there, no GPU check), updates at run time, duplicates summed."""
    idx = np.array([[2, 0], [0, 1], [2, 0], [1, 3]], np.int32)
    upd = _rng("scatter-const").standard_normal((4, 5)).astype(np.float32)
    check_op(*single_op("SCATTER_ND", [C(idx), In(upd), C(np.array([3, 4, 5], np.int32))], out_dtype=np.float32),
             backend)


@pytest.mark.parametrize(("shape", "dtype"), [((5,), np.float32), ((2, 3, 4), np.int32), ((3, 2), np.uint8)])
def test_matrix_diag(shape, dtype, backend: str) -> None:
    d = _rng("diag", shape).integers(1, 9, shape).astype(dtype)
    check_op(*single_op("MATRIX_DIAG", [In(d)]), backend)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (2, 6, 3)])
def test_matrix_set_diag(shape, backend: str) -> None:
    rng = _rng("set-diag", shape)
    x = rng.standard_normal(shape).astype(np.float32)
    d = rng.standard_normal((*shape[:-2], min(shape[-2:]))).astype(np.float32)
    check_op(*single_op("MATRIX_SET_DIAG", [In(x), In(d)]), backend)


def test_atan2(backend: str) -> None:
    rng = _rng("atan2")
    a, b = rng.standard_normal((2, 3, 5)).astype(np.float32)  # LiteRT's atan2.cc takes equal shapes only
    a[0, :2], b[0, :3] = 0, 0  # atan2(0, 0) and the axes
    check_op(*single_op("ATAN2", [In(a), In(b)]), backend)


_BIT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]


@pytest.mark.parametrize("dtype", _BIT_TYPES)
def test_right_shift(dtype: str, backend: str) -> None:
    """Shifts below 0 and at or past the width are clamped to [0, bits - 1]."""
    info = np.iinfo(dtype)
    x = np.array([[info.min, -1 if info.min else 1, 0, 7, info.max, 100, 3, 1]], dtype)
    bits = info.bits
    s = np.array([[1, 3, 0, bits - 1, bits + 4 if bits < 255 else 9, 2, 1 if info.min == 0 else -2, 5],
                  [0, 1, 2, 3, 4, 5, 6, 7]], np.int64).astype(dtype)
    check_op(*single_op("RIGHT_SHIFT", [In(x), In(s)]), backend)


@pytest.mark.parametrize("dtype", _BIT_TYPES)
def test_bitwise_xor(dtype: str, backend: str) -> None:
    info = np.iinfo(dtype)
    rng = _rng("xor", dtype)
    a = rng.integers(info.min, info.max, (2, 6), endpoint=True, dtype=np.int64).astype(dtype)
    b = rng.integers(info.min, info.max, (6,), endpoint=True, dtype=np.int64).astype(dtype)
    check_op(*single_op("BITWISE_XOR", [In(a), In(b)]), backend)


def test_relu_0_to_1(backend: str) -> None:
    x = np.array([[-2, -0.0, 0.25, 0.999, 1, 1.5, np.inf, -np.inf]], np.float32)
    check_op(*single_op("RELU_0_TO_1", [In(x)]), backend)


SEGMENT_OPS = ["UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN"]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("op", SEGMENT_OPS)
def test_unsorted_segment(op: str, dtype, backend: str) -> None:
    """Ids in any order, a skipped negative id, an empty segment (the identity), 2-D ids."""
    rng = _rng("unsorted", op, dtype)
    data = (rng.standard_normal((4, 3, 5)) * 3).astype(dtype)
    ids = np.array([[2, 0, -1], [2, 4, 0], [1, 0, 2], [4, 4, 1]], np.int32)
    check_op(*single_op(op, [In(data), In(ids), C(np.array(6, np.int32))]), backend)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_segment_sum(dtype, backend: str) -> None:
    data = (_rng("segment", dtype).standard_normal((7, 2, 3)) * 4).astype(dtype)
    ids = np.array([0, 0, 1, 2, 2, 2, 3], np.int32)  # LiteRT takes ids rising by 0 or 1 only
    check_op(*single_op("SEGMENT_SUM", [In(data), C(ids)]), backend)


@pytest.mark.parametrize(("shape", "update", "start"), [
    ((4, 6), (2, 3), [1, 2]), ((4, 6), (2, 3), [3, -5]), ((2, 3, 4), (1, 3, 2), [1, 0, 9]), ((5,), (5,), [2])])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_dynamic_update_slice(shape, update, start, dtype, backend: str) -> None:
    """Start indices past the edge (or negative) are clamped so the update fits."""
    rng = _rng("dus", shape, update, dtype)
    x, u = (rng.integers(-5, 6, s).astype(dtype) for s in (shape, update))
    check_op(*single_op("DYNAMIC_UPDATE_SLICE", [In(x), In(u), In(np.array(start, np.int32))]), backend)


@pytest.mark.parametrize(("seq_dim", "batch_dim"), [(1, 0), (0, 1), (2, 0), (1, 2)])
def test_reverse_sequence(seq_dim: int, batch_dim: int, backend: str) -> None:
    x = _rng("revseq", seq_dim, batch_dim).standard_normal((3, 4, 5)).astype(np.float32)
    lengths = np.array([0, 1, 3, 4, 5][:x.shape[batch_dim]], np.int32)
    lengths = np.minimum(lengths, x.shape[seq_dim])
    check_op(*single_op("REVERSE_SEQUENCE", [In(x), In(lengths)], seq_dim=seq_dim, batch_dim=batch_dim), backend)


@pytest.mark.parametrize(("dtype", "quant"), [(np.float32, None), (np.int32, None), (np.int8, None),
                                            (np.int8, (0.1, 3))], ids=["float32", "int32", "int8", "int8-quantized"])
def test_embedding_lookup(dtype, quant, backend: str) -> None:
    table = _rng("embed", dtype).integers(-50, 50, (10, 3, 4)).astype(dtype)
    ids = np.array([3, 0, 9, 3, 7], np.int32)
    check_op(*single_op("EMBEDDING_LOOKUP", [In(ids), C(table, quant)], out_dtype=dtype, out_quant=quant), backend)


def test_resized_input_follows(backend: str) -> None:
    """The shape rules carry a resized input through L2_NORMALIZATION, TOPK_V2 and MATRIX_DIAG."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 2, 8), np.float32)
    n = mb.tensor("n", (1, 2, 8), np.float32)
    v, i = mb.tensor("v", (1, 2, 3), np.float32), mb.tensor("i", (1, 2, 3), np.int32)
    d = mb.tensor("d", (1, 2, 3, 3), np.float32)
    mb.op("L2_NORMALIZATION", [x], [n])
    mb.op("TOPK_V2", [n, mb.const("k", np.array(3, np.int32))], [v, i])
    mb.op("MATRIX_DIAG", [v], [d])
    mb.output(d, i)
    check_op(mb.build(), [_rng("resize").standard_normal((3, 4, 8)).astype(np.float32)], backend)


@pytest.mark.parametrize(("n", "dtype"), [(2, np.float32), (5, np.float32), (3, np.int32)])
def test_add_n(n: int, dtype, backend: str) -> None:
    rng = _rng("add_n", n, dtype)
    xs = [In((rng.standard_normal((2, 3, 4)) * 100).astype(dtype)) for _ in range(n)]
    check_op(*single_op("ADD_N", xs), backend)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_bucketize(dtype, backend: str) -> None:
    """Values on a boundary go to the bucket above it (upper_bound)."""
    bounds = [-5.0, -1.0, 0.0, 0.5, 3.0, 3.0, 10.0]
    x = np.array([[-7, -5, -1, 0, 0.25, 0.5, 3, 4, 10, 11, 2.9999, -0.0]]).astype(dtype)
    check_op(*single_op("BUCKETIZE", [In(x)], out_dtype=np.int32, boundaries=bounds), backend)


# (input 1 (scale, zero point), input 2, output)
SQDIFF_QUANT = {"same-scales": ((0.05, 3), (0.05, 3), (0.02, -128)), "mixed": ((0.1, -7), (0.03, 20), (0.5, -100)),
                "tiny-out": ((0.01, 0), (0.012, -5), (0.0005, -128))}


@pytest.mark.parametrize("case", list(SQDIFF_QUANT))
def test_squared_difference_int8_all_pairs(case: str, backend: str) -> None:
    """Every pair of int8 codes (a column against a row, broadcast), LiteRT's integer formula."""
    q1, q2, qo = SQDIFF_QUANT[case]
    a = np.arange(-128, 128, dtype=np.int8).reshape(256, 1)
    b = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    check_op(*single_op("SQUARED_DIFFERENCE", [In(a, q1), In(b, q2)], out_quant=qo), backend)


@pytest.mark.parametrize(("lo", "hi", "bits"), [
    (-1.0, 1.0, 8), (-0.3, 2.7, 8), (0.0, 6.0, 4), (-5.0, 0.0, 16), (-0.02, 3.1, 3)])
def test_fake_quant(lo: float, hi: float, bits: int, backend: str) -> None:
    """Values across and beyond the range, including grid points and midpoints."""
    rng = _rng("fake-quant", lo, hi, bits)
    grid = lo + (hi - lo) / ((1 << bits) - 1) * np.arange(-3, 12) / 2  # half steps from below the range
    x = np.concatenate([rng.uniform(lo - 1, hi + 1, 200), grid]).astype(np.float32)
    check_op(*single_op("FAKE_QUANT", [In(x)], min=lo, max=hi, num_bits=bits), backend)


def test_fake_quant_narrow_range_is_refused() -> None:
    model, _ = single_op("FAKE_QUANT", [In(np.zeros(4, np.float32))], out_shape=(4,), min=-1.0, max=1.0, num_bits=8,
                         narrow_range=True)
    with pytest.raises(UnsupportedOpError, match="narrow_range"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


# (indices, output shape, values (None: one scalar for all), dtype)
SPARSE_CASES = {"1d": ([1, 4, 6], [8], [5, -3, 2], np.int32), "2d-scalar": ([[0, 1], [2, 0], [1, 1]], [3, 2], None,
                                                                           np.float32),
                "3d": ([[0, 1, 2], [1, 0, 0]], [2, 3, 4], [1.5, -2.0], np.float32),
                "4d-uint8": ([[0, 0, 1, 1], [0, 1, 0, 2]], [1, 2, 2, 3], [200, 7], np.uint8),
                "int64-values": ([[3], [0]], [5], [1 << 40, -(1 << 35)], np.int64)}


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", list(SPARSE_CASES))
def test_sparse_to_dense(case: str, index_dtype, backend: str) -> None:
    indices, shape, values, dtype = SPARSE_CASES[case]
    vals = np.array(9 if values is None else values, dtype)
    ins = [In(np.array(indices, index_dtype)), C(np.array(shape, index_dtype)), In(vals), In(np.array(4, dtype))]
    check_op(*single_op("SPARSE_TO_DENSE", ins, out_dtype=dtype), backend)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("shape", [(6, 16), (2, 3, 40), (3, 40000)])
def test_l2_normalization_quantized(shape, dtype, backend: str) -> None:
    """Rows at the zero point (the kernel's acc <= 1 case), near it, ordinary and, with 40000
    extreme codes, huge (acc >= 2**29: the inverse square root's pre-scaling loop)."""
    info = np.iinfo(dtype)
    zp = 5 if dtype == np.int8 else 131
    rng = _rng("l2q", shape, dtype)
    x = (rng.choice(np.array([info.min, info.max]), shape) if shape[-1] > 10000
         else rng.integers(info.min, info.max, shape, endpoint=True)).astype(dtype)
    x.reshape(-1, shape[-1])[0] = zp
    x.reshape(-1, shape[-1])[1, :] = zp
    x.reshape(-1, shape[-1])[1, 0] = zp + 1
    out_q = (1 / 128, 0 if dtype == np.int8 else 128)
    check_op(*single_op("L2_NORMALIZATION", [In(x, (0.05, zp))], out_quant=out_q), backend)


@pytest.mark.parametrize(("dtype", "per_row"), [(np.int8, False), (np.int8, True), (np.uint8, False)])
def test_embedding_lookup_hybrid(dtype, per_row: bool, backend: str) -> None:
    """An int8/uint8 table with a float32 output: codes times the scale (uint8 bytes read as int8, as LiteRT)."""
    rng = _rng("embed-hybrid", dtype, per_row)
    info = np.iinfo(dtype)
    table = rng.integers(info.min, info.max, (6, 2, 5), endpoint=True).astype(dtype)
    scale = rng.uniform(0.01, 0.2, 6).astype(np.float32) if per_row else np.float32(0.05)
    quant = Quant(scale=scale, zero_point=np.zeros(np.size(scale), np.int64), axis=0)
    ids = np.array([5, 0, 2, 2, 4], np.int32)
    check_op(*single_op("EMBEDDING_LOOKUP", [In(ids), C(table, quant)], out_dtype=np.float32), backend)


@pytest.mark.parametrize(("src", "dst", "shape", "out_shape"), [
    (np.float32, np.int32, (2, 3), (2, 3)), (np.int32, np.uint8, (2, 3), (2, 3, 4)),
    (np.int8, np.int16, (3, 2), (3,)), (np.uint8, np.float32, (2, 4), (2,))])
def test_bitcast(src, dst, shape, out_shape, backend: str) -> None:
    x = _rng("bitcast", src, dst).integers(0, 120, shape).astype(src)
    if np.dtype(src).kind == "f":
        x = x * np.float32(-1.37)
    check_op(*single_op("BITCAST", [In(x)], out_dtype=dst, out_shape=out_shape), backend)


@pytest.mark.parametrize(("shape", "dilations", "dtype"), [
    ((3, 3), (2, 3), np.float32), ((2, 3, 4), (1, 2, 1), np.int32), ((5,), (4,), np.int8),
    ((2, 2, 2), (1, 1, 1), np.float32)])
def test_dilate(shape, dilations, dtype, backend: str) -> None:
    x = _rng("dilate", shape).integers(-9, 10, shape).astype(dtype)
    check_op(*single_op("DILATE", [In(x), C(np.array(dilations, np.int32)), In(np.array(7, dtype))]), backend)


def _runtime_input_model(op: str, ins: list, outs: list) -> bytes:
    """``op`` with the inputs ``ins`` ((name, array, True for a graph input / False for a constant))
    and outputs ``outs`` ((shape, dtype))."""
    mb = ModelBuilder()
    idx = [mb.input(n, v.shape, v.dtype) if live else mb.const(n, v) for n, v, live in ins]
    ys = [mb.tensor(f"y{k}", shape, dtype) for k, (shape, dtype) in enumerate(outs)]
    mb.op(op, idx, ys)
    mb.output(*ys)
    return mb.build()


f32 = np.zeros((2, 8), np.float32)
RUNTIME_SHAPE_INPUTS = {
    "TOPK_V2": ([("x", f32, True), ("k", np.array(3, np.int32), True)], [((2, 3), np.float32), ((2, 3), np.int32)],
                "k"),
    "RFFT2D": ([("x", f32, True), ("n", np.array([2, 8], np.int32), True)], [((2, 5), np.complex64)], "fft_length"),
    "SCATTER_ND": ([("i", np.zeros((1, 1), np.int32), True), ("u", np.zeros(1, np.float32), True),
                    ("s", np.array([4], np.int32), True)], [((4,), np.float32)], "shape"),
    "SEGMENT_SUM": ([("x", f32, True), ("ids", np.zeros(2, np.int32), True)], [((1, 8), np.float32)], "segment_ids"),
    "UNSORTED_SEGMENT_SUM": ([("x", f32, True), ("ids", np.zeros(2, np.int32), False),
                              ("n", np.array(3, np.int32), True)], [((3, 8), np.float32)], "num_segments"),
    "SPARSE_TO_DENSE": ([("i", np.zeros(1, np.int32), True), ("s", np.array([4], np.int32), True),
                         ("v", np.zeros(1, np.float32), True), ("d", np.zeros((), np.float32), True)],
                        [((4,), np.float32)], "output_shape"),
    "DILATE": ([("x", f32, True), ("d", np.array([1, 2], np.int32), True), ("p", np.zeros((), np.float32), True)],
               [((2, 15), np.float32)], "dilations"),
}


@pytest.mark.parametrize("op", list(RUNTIME_SHAPE_INPUTS))
def test_runtime_shape_inputs_are_refused(op: str) -> None:
    """A run-time input that sizes the output: refused at allocate, naming op, node, backend and input."""
    ins, outs, what = RUNTIME_SHAPE_INPUTS[op]
    it = Interpreter(model_content=_runtime_input_model(op, ins, outs), backend="cpu")
    with pytest.raises(UnsupportedOpError, match=f"{what}.*run time") as e:
        it.allocate_tensors()
    assert (e.value.op, e.value.node_index, e.value.backend) == (op, 0, "cpu")


@pytest.mark.parametrize(("keys", "dtype"), [([-7, 0, 3, 8, 20, 21], np.float32), ([9, 2, 5, 5, 1, 7], np.int32)])
def test_hashtable_lookup(keys, dtype, backend: str) -> None:
    """Sorted keys, and unsorted ones with a repeat (LiteRT's binary search decides what is found)."""
    table = _rng("hashtable", dtype).integers(-50, 50, (len(keys), 3)).astype(dtype)
    ids = np.array([3, 4, 21, -7, 5, 9, 1, 100, 7], np.int32)
    mb = ModelBuilder()
    x = mb.input("ids", ids.shape, np.int32)
    out, hits = mb.tensor("out", (len(ids), 3), dtype), mb.tensor("hits", (len(ids),), np.uint8)
    mb.op("HASHTABLE_LOOKUP", [x, mb.const("keys", np.array(keys, np.int32)), mb.const("values", table)], [out, hits])
    mb.output(out, hits)
    check_op(mb.build(), [ids], backend)


# (input shape, window, strides, dilations, function, dtype, init)
REDUCE_WINDOW_CASES = {
    "add-2d": ((5, 7), (2, 3), (1, 2), (1, 1), "ADD", np.float32, 0.5),
    "max-4d": ((1, 6, 6, 3), (1, 3, 3, 1), (1, 2, 2, 1), (1, 1, 1, 1), "MAXIMUM", np.float32, -np.inf),
    "min-dilated": ((2, 9, 8), (1, 2, 3), (1, 1, 2), (1, 3, 2), "MINIMUM", np.int32, 1000),
    "mul-int8": ((4, 5), (2, 2), (2, 1), (1, 1), "MUL", np.int8, 1),
    "all-bool": ((4, 6), (2, 2), (1, 1), (1, 2), "ALL", np.bool_, True),
    "any-bool": ((3, 5), (3, 2), (1, 2), (1, 1), "ANY", np.bool_, False),
}


@pytest.mark.parametrize("case", list(REDUCE_WINDOW_CASES))
def test_reduce_window(case: str, backend: str) -> None:
    shape, window, strides, dilations, fn, dtype, init = REDUCE_WINDOW_CASES[case]
    rng = _rng("reduce-window", case)
    x = (rng.random(shape) > 0.3) if dtype == np.bool_ else rng.integers(-3, 4, shape).astype(dtype)
    if dtype == np.float32:
        x = rng.standard_normal(shape).astype(dtype)
    ins = [In(x), In(np.array(init, dtype)), *(C(np.array(v, np.int64)) for v in (window, strides, dilations))]
    check_op(*single_op("REDUCE_WINDOW", ins, reduce_function=fn), backend)


# (indices, dense shape): the last coordinate is dropped; a bucket revisited after another one is
# finished twice by LiteRT (and gpulite)
ELS_CASES = {"2d": ([[0, 0], [0, 1], [1, 0], [2, 3], [2, 5]], [3, 6]),
             "3d-revisit": ([[0, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 0]], [2, 2, 4])}


@pytest.mark.parametrize("combiner", ["SUM", "MEAN", "SQRTN"])
@pytest.mark.parametrize("case", list(ELS_CASES))
def test_embedding_lookup_sparse(case: str, combiner: str, backend: str) -> None:
    indices, dense = ELS_CASES[case]
    rng = _rng("els", case, combiner)
    n = len(indices)
    ins = [In(rng.integers(0, 7, n).astype(np.int32)), C(np.array(indices, np.int32)), C(np.array(dense, np.int32)),
           In(rng.uniform(0.2, 2.0, n).astype(np.float32)), C(rng.standard_normal((7, 2, 3)).astype(np.float32))]
    check_op(*single_op("EMBEDDING_LOOKUP_SPARSE", ins, out_dtype=np.float32,
                        out_shape=(*dense[:-1], 2, 3), combiner=combiner), backend)


def test_local_response_normalization_huge_radius(backend: str) -> None:
    """A radius far past the channels sums every channel (and allocates no huge window)."""
    x = _rng("lrn-huge").standard_normal((1, 2, 3, 6)).astype(np.float32)
    check_op(*single_op("LOCAL_RESPONSE_NORMALIZATION", [In(x)], radius=1 << 20, bias=1.0, alpha=0.5, beta=0.75),
             backend)
