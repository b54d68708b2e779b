"""PACK, UNPACK, SPLIT, SPLIT_V, TILE, REVERSE_V2, GATHER (batch_dims), GATHER_ND, MIRROR_PAD,
SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND against LiteRT, over float, integer and quantized data."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op
from tests.ops.single_op import C, In, single_op

DTYPES = ["float32", "int32", "int8", "int64"]


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


def _data(shape, dtype, *key) -> np.ndarray:
    return _rng(*key).integers(-100, 100, shape).astype(dtype)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pack(dtype: str, axis: int, backend: str) -> None:
    xs = [_data((3, 4), dtype, "pack", i) for i in range(3)]
    check_op(*single_op("PACK", [In(x) for x in xs], values_count=3, axis=axis), backend)


def test_pack_quantized(backend: str) -> None:
    xs = [_data((2, 5), "int8", "packq", i) for i in range(2)]
    q = (0.05, -3)
    check_op(*single_op("PACK", [In(x, q) for x in xs], out_quant=q, values_count=2, axis=1), backend)


def test_pack_refuses_mixed_quantization() -> None:
    xs = [np.zeros((2, 5), np.int8)] * 2
    model, _ = single_op("PACK", [In(xs[0], (0.05, 0)), In(xs[1], (0.1, 0))], out_quant=(0.05, 0),
                         out_shape=(2, 2, 5), values_count=2, axis=0)
    with pytest.raises(UnsupportedOpError, match=r"PACK.*quantized differently"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


def multi_out_model(op: str, ins: list, out_shapes: list, dtype, **options) -> tuple[bytes, list[np.ndarray]]:
    mb = ModelBuilder()
    idx, feeds = [], []
    for k, v in enumerate(ins):
        if isinstance(v, C):
            idx.append(mb.const(f"c{k}", v.value))
        else:
            idx.append(mb.input(f"x{k}", v.value.shape, v.value.dtype))
            feeds.append(v.value)
    outs = [mb.tensor(f"y{i}", s, dtype) for i, s in enumerate(out_shapes)]
    mb.op(op, idx, outs, **options)
    mb.output(*outs)
    return mb.build(), feeds


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "int16", "bool"])
def test_unpack(dtype: str, axis: int, backend: str) -> None:
    x = _data((2, 3, 4), "int32", "unpack").astype(dtype)
    n = x.shape[axis]
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis % 3)
    check_op(*multi_out_model("UNPACK", [In(x)], [shape] * n, dtype, num=n, axis=axis), backend)


def test_unpack_refuses_int64_as_litert() -> None:
    model, _ = multi_out_model("UNPACK", [In(np.zeros((2, 3), np.int64))], [(3,), (3,)], "int64", num=2)
    with pytest.raises(UnsupportedOpError, match=r"UNPACK.*int64"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


@pytest.mark.parametrize(("axis", "num"), [(0, 2), (1, 3), (-1, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_split(dtype: str, axis: int, num: int, backend: str) -> None:
    x = _data((4, 6, 8), dtype, "split")
    parts = np.split(x, num, axis=axis)
    model = multi_out_model("SPLIT", [C(np.array(axis, np.int32)), In(x)], [p.shape for p in parts], dtype,
                            num_splits=num)
    check_op(*model, backend)


@pytest.mark.parametrize("sizes", [[1, 2, 3], [2, -1, 1], [0, 6, 0]], ids=["sizes", "minus-one", "empty-parts"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_split_v(dtype: str, sizes, backend: str) -> None:
    x = _data((3, 6, 2), dtype, "split_v")
    real = [s if s >= 0 else 6 - (sum(sizes) + 1) for s in sizes]
    shapes = [(3, s, 2) for s in real]
    model = multi_out_model("SPLIT_V", [In(x), C(np.array(sizes, np.int32)), C(np.array(1, np.int32))], shapes,
                            dtype, num_splits=3)
    check_op(*model, backend)


def test_split_refuses_uneven_parts() -> None:
    x = np.zeros((5, 2), np.float32)
    model, _ = multi_out_model("SPLIT", [C(np.array(0, np.int32)), In(x)], [(2, 2), (3, 2)], "float32", num_splits=2)
    with pytest.raises(ShapeError, match=r"SPLIT.*5.*2 equal parts"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


@pytest.mark.parametrize("multiples", [[2, 1, 3], [1, 1, 1], [3, 2, 1]])
@pytest.mark.parametrize("dtype", ["float32", "int8", "int64", "bool"])
def test_tile(dtype: str, multiples, backend: str) -> None:
    x = _data((2, 3, 4), "int32", "tile") > 0 if dtype == "bool" else _data((2, 3, 4), dtype, "tile")
    check_op(*single_op("TILE", [In(x), C(np.array(multiples, np.int32))]), backend)


@pytest.mark.parametrize("axes", [[0], [1], [-1], [2], [2, 1], [0, 1, 2]])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_reverse_v2(dtype: str, axes, backend: str) -> None:
    x = _rng("rev").integers(0, 100, (2, 3, 4)).astype(dtype)
    check_op(*single_op("REVERSE_V2", [In(x), C(np.array(axes, np.int32))]), backend)


def test_reverse_v2_refuses_non_contiguous_axes() -> None:
    model, _ = single_op("REVERSE_V2", [In(np.zeros((2, 3, 4), np.float32)), C(np.array([0, 2], np.int32))],
                         out_shape=(2, 3, 4))
    with pytest.raises(ShapeError, match=r"REVERSE_V2.*contiguous"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()


GATHERS = {  # params shape, indices shape, axis, batch_dims
    "axis0": ((5, 4), (3,), 0, 0),
    "axis1-matrix-indices": ((3, 5, 2), (2, 4), 1, 0),
    "batch1": ((2, 5, 3), (2, 4), 1, 1),
    "batch1-axis2": ((2, 3, 6), (2, 5), 2, 1),
    "batch2": ((2, 3, 7, 2), (2, 3, 4), 2, 2),
    "batch-negative": ((2, 5, 3), (2, 4), 1, -1),
}


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("case", list(GATHERS))
def test_gather_batch_dims(case: str, dtype: str, backend: str) -> None:
    ps, isz, axis, bd = GATHERS[case]
    params = _data(ps, dtype, "g", case)
    idx = _rng("gi", case).integers(0, ps[axis], isz).astype(np.int32)
    check_op(*single_op("GATHER", [In(params), In(idx)], axis=axis, batch_dims=bd), backend)


def test_gather_batch_dims_const_indices(backend: str) -> None:
    params = _data((2, 5, 3), "float32", "gc")
    idx = np.array([[4, 0, 2], [1, 1, 3]], np.int32)
    check_op(*single_op("GATHER", [In(params), C(idx)], axis=1, batch_dims=1), backend)


GATHER_NDS = {"full": ((4, 5), (3, 2)), "rows": ((4, 5, 2), (2, 3, 1)), "pairs": ((3, 4, 5), (6, 2)),
              "scalar-index": ((6,), (1,))}


@pytest.mark.parametrize("const", [False, True], ids=["runtime", "const"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8"])
@pytest.mark.parametrize("case", list(GATHER_NDS))
def test_gather_nd(case: str, dtype: str, const: bool, backend: str) -> None:
    ps, isz = GATHER_NDS[case]
    params = _data(ps, dtype, "gnd", case)
    rng = _rng("gndi", case)
    idx = np.stack([rng.integers(0, ps[k], isz[:-1]) for k in range(isz[-1])], axis=-1).astype(np.int32)
    check_op(*single_op("GATHER_ND", [In(params), C(idx) if const else In(idx)]), backend)


def test_gather_nd_out_of_range_fails_the_invoke() -> None:
    model, _ = single_op("GATHER_ND", [In(np.zeros((3, 2), np.float32)), In(np.zeros((1, 1), np.int32))])
    it = Interpreter(model_content=model, backend="cpu")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[1]["index"], np.array([[3]], np.int32))
    with pytest.raises(IndexError, match=r"GATHER_ND.*\[3\]"):
        it.invoke()


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("pads", [[[0, 0], [1, 2], [2, 1], [0, 0]], [[1, 0], [0, 3], [0, 0], [1, 1]]],
                         ids=["spatial", "mixed"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8"])
def test_mirror_pad(mode: str, pads, dtype: str, backend: str) -> None:
    x = _data((2, 4, 5, 3), dtype, "mirror")
    check_op(*single_op("MIRROR_PAD", [In(x), C(np.array(pads, np.int32))], mode=mode), backend)


@pytest.mark.parametrize(("mode", "pad"), [("REFLECT", 3), ("SYMMETRIC", 4)])
def test_mirror_pad_refuses_pads_wider_than_the_input(mode: str, pad: int) -> None:
    """REFLECT mirrors at most dim - 1 values, SYMMETRIC at most dim (here dim 3)."""
    mb = ModelBuilder()
    x = mb.input("x", (2, 3), np.float32)
    y = mb.tensor("y", (2, 3 + pad), np.float32)
    mb.op("MIRROR_PAD", [x, mb.const("p", np.array([[0, 0], [pad, 0]], np.int32))], [y], mode=mode)
    mb.output(y)
    with pytest.raises(ShapeError, match=rf"MIRROR_PAD.*{mode}"):
        Interpreter(model_content=mb.build(), backend="cpu").allocate_tensors()


BLOCKS = {  # input shape, block shape, paddings (space_to_batch) / crops (batch_to_space)
    "2d": ((1, 4, 6, 2), [2, 2], [[0, 0], [0, 0]]),
    "2d-padded": ((2, 3, 5, 1), [2, 3], [[1, 0], [0, 1]]),
    "1d": ((2, 6, 3), [3], [[1, 2]]),
}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("case", list(BLOCKS))
def test_space_to_batch_nd(case: str, dtype: str, backend: str) -> None:
    shape, block, pads = BLOCKS[case]
    x = _data(shape, dtype, "s2b", case)
    ins = [In(x), C(np.array(block, np.int32)), C(np.array(pads, np.int32))]
    check_op(*single_op("SPACE_TO_BATCH_ND", ins), backend)


def test_space_to_batch_nd_pads_with_the_zero_point(backend: str) -> None:
    x = _data((1, 3, 3, 2), "int8", "s2bq")
    q = (0.1, 7)
    ins = [In(x, q), C(np.array([2, 2], np.int32)), C(np.array([[1, 0], [0, 1]], np.int32))]
    check_op(*single_op("SPACE_TO_BATCH_ND", ins, out_quant=q), backend)


BATCHES = {
    "2d": ((4, 2, 3, 2), [2, 2], [[0, 0], [0, 0]]),
    "2d-cropped": ((6, 2, 2, 1), [2, 3], [[1, 0], [0, 2]]),
    "1d": ((6, 2, 3), [3], [[1, 2]]),
}


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("case", list(BATCHES))
def test_batch_to_space_nd(case: str, dtype: str, backend: str) -> None:
    shape, block, crops = BATCHES[case]
    x = _data(shape, dtype, "b2s", case)
    ins = [In(x), C(np.array(block, np.int32)), C(np.array(crops, np.int32))]
    check_op(*single_op("BATCH_TO_SPACE_ND", ins), backend)


def _one_node(op: str, ins: list, out_shapes: list, dtype="float32", **options) -> bytes:
    return multi_out_model(op, ins, out_shapes, dtype, **options)[0]


BAD_AXES = {
    "pack-axis": lambda: _one_node("PACK", [In(np.zeros((2, 3), np.float32))] * 2, [(2, 2, 3)], values_count=2,
                                   axis=3),
    "unpack-axis": lambda: _one_node("UNPACK", [In(np.zeros((2, 3), np.float32))], [(3,), (3,)], num=2, axis=-3),
    "split-axis": lambda: _one_node("SPLIT", [C(np.array(2, np.int32)), In(np.zeros((2, 4), np.float32))],
                                    [(2, 2), (2, 2)], num_splits=2),
    "split_v-sizes": lambda: _one_node("SPLIT_V", [In(np.zeros((2, 4), np.float32)), C(np.array([1, 2], np.int32)),
                                                   C(np.array(1, np.int32))], [(2, 1), (2, 2)], num_splits=2),
    "gather-batch_dims": lambda: _one_node("GATHER", [In(np.zeros((2, 3), np.float32)),
                                                      In(np.zeros((2, 2), np.int32))], [(2, 2)], axis=0,
                                           batch_dims=1),
    "cumsum-axis": lambda: _one_node("CUMSUM", [In(np.zeros((2, 3), np.float32)), C(np.array(2, np.int32))],
                                     [(2, 3)]),
    "one_hot-axis": lambda: _one_node("ONE_HOT", [In(np.zeros(3, np.int32)), C(np.array(2, np.int32)),
                                                  C(np.array(1, np.float32)), C(np.array(0, np.float32))],
                                      [(3, 2)], axis=2),
    "tile-multiples": lambda: _one_node("TILE", [In(np.zeros((2, 3), np.float32)), C(np.array([2], np.int32))],
                                        [(4, 3)]),
    "batch_to_space-block": lambda: _one_node("BATCH_TO_SPACE_ND", [In(np.zeros((3, 2, 2, 1), np.float32)),
                                                                    C(np.array([2, 2], np.int32)),
                                                                    C(np.zeros((2, 2), np.int32))], [(1, 4, 4, 1)]),
}


@pytest.mark.parametrize("case", list(BAD_AXES))
def test_bad_axes_and_parameters_fail_at_allocate(case: str) -> None:
    """A clear ShapeError naming the op at allocate_tensors, never a numpy error at invoke."""
    model = BAD_AXES[case]()
    op = case.split("-")[0].upper().replace("BATCH_TO_SPACE", "BATCH_TO_SPACE_ND")
    with pytest.raises(ShapeError, match=rf"\({op}\)"):
        Interpreter(model_content=model, backend="cpu").allocate_tensors()
