"""Layout ops against LiteRT: RESHAPE, SQUEEZE, EXPAND_DIMS, PAD(V2), CONCATENATION,
STRIDED_SLICE, SLICE, TRANSPOSE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, ARG_MAX/ARG_MIN."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.compare import assert_same
from tests.ops.harness import check_op, run_gpulite, run_litert
from tests.ops.single_op import C, In, single_op

RNG = np.random.default_rng(1234)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def q8(dtype, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def i32(*v) -> np.ndarray:
    return np.array(v, np.int32)


# --- RESHAPE / SQUEEZE / EXPAND_DIMS ------------------------------------------------------
RESHAPES = {
    "options-minus1": ([In(f32(2, 3, 4))], {"new_shape": [4, -1]}),
    "shape-input": ([In(f32(2, 3, 4)), C(i32(-1, 6))], {}),
    "shape-input-wins": ([In(f32(2, 3, 4)), C(i32(24))], {"new_shape": [4, 6]}),
    "to-scalar-like": ([In(f32(1, 1, 1, 7)), C(i32(7))], {}),
    "int8": ([In(q8(np.int8, 2, 12), (0.5, -3)), C(i32(3, 2, 4))], {}),
}


@pytest.mark.parametrize("case", RESHAPES)
def test_reshape(case, backend):
    ins, opts = RESHAPES[case]
    check_op(*single_op("RESHAPE", ins, **opts), backend)


SQUEEZES = {
    "all": (f32(1, 3, 1, 4), {}),
    "dims": (f32(1, 3, 1, 4, 1), {"squeeze_dims": [0, -1]}),
    "uint8": (q8(np.uint8, 1, 5, 1), {"squeeze_dims": [2]}),
}


@pytest.mark.parametrize("case", SQUEEZES)
def test_squeeze(case, backend):
    x, opts = SQUEEZES[case]
    quant = (0.1, 7) if x.dtype == np.uint8 else None
    check_op(*single_op("SQUEEZE", [In(x, quant)], **opts), backend)


@pytest.mark.parametrize("axis", [0, 2, 3, -1, -4])
def test_expand_dims(axis, backend):
    check_op(*single_op("EXPAND_DIMS", [In(f32(2, 3, 4)), C(i32(axis))]), backend)


def test_expand_dims_int64_axis_int8(backend):
    x = In(q8(np.int8, 3, 4), (0.2, 1))
    check_op(*single_op("EXPAND_DIMS", [x, C(np.array([1], np.int64))]), backend)


# --- PAD / PADV2 ----------------------------------------------------------------------------
PADS = {
    "nhwc": (f32(1, 5, 6, 3), [[0, 0], [1, 2], [3, 0], [0, 0]]),
    "channels": (f32(1, 4, 4, 24), [[0, 0], [0, 0], [0, 0], [0, 4]]),
    "all-dims": (f32(2, 3, 4), [[1, 1], [2, 0], [0, 3]]),
    "none": (f32(2, 3), [[0, 0], [0, 0]]),
    "int8-zp": (q8(np.int8, 1, 3, 3, 2), [[0, 0], [1, 1], [1, 1], [0, 0]]),
    "uint8-zp": (q8(np.uint8, 1, 3, 3, 2), [[0, 0], [2, 0], [0, 2], [1, 0]]),
}


@pytest.mark.parametrize("case", PADS)
def test_pad(case, backend):
    x, pads = PADS[case]
    quant = None if x.dtype == np.float32 else (0.25, -7 if x.dtype == np.int8 else 131)
    check_op(*single_op("PAD", [In(x, quant), C(i32(*pads))]), backend)


def test_pad_int64_paddings(backend):
    check_op(*single_op("PAD", [In(f32(3, 4)), C(np.array([[1, 0], [2, 2]], np.int64))]), backend)


@pytest.mark.parametrize("kind", ["float", "float-all-dims", "int8", "runtime-value"])
def test_padv2(kind, backend):
    pads = C(i32([0, 0], [1, 2], [2, 1], [0, 0]))
    if kind == "float":
        ins = [In(f32(1, 3, 4, 2)), pads, C(np.array([3.5], np.float32))]
    elif kind == "float-all-dims":  # batch and channels padded too
        ins = [In(f32(1, 4, 5, 3)), C(i32([1, 0], [0, 1], [1, 1], [2, 0])), C(np.array([-1.5], np.float32))]
    elif kind == "int8":
        ins = [In(q8(np.int8, 1, 3, 4, 2), (0.5, 2)), pads, C(np.array([-100], np.int8), (0.5, 2))]
    else:
        ins = [In(f32(1, 3, 4, 2)), pads, In(np.array([-2.25], np.float32))]
    check_op(*single_op("PADV2", ins), backend)


def test_pad_border_survives_arena_reuse(backend):
    """The pad border must be rewritten every run: here PAD's output shares arena bytes with
    an earlier intermediate (ADD's output) that holds non-zero data when PAD runs."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 4), np.float32)
    t0 = mb.tensor("t0", (1, 8, 8, 4), np.float32)
    mb.op("ADD", [x, x], [t0])
    t1 = mb.tensor("t1", (1, 4, 4, 4), np.float32)
    mb.op("STRIDED_SLICE", [t0, mb.const("b", i32(0, 0, 0, 0)), mb.const("e", i32(1, 4, 4, 4)),
                            mb.const("s", i32(1, 1, 1, 1))], [t1])
    t2 = mb.tensor("t2", (1, 6, 6, 4), np.float32)
    mb.op("PAD", [t1, mb.const("p", i32([0, 0], [1, 1], [1, 1], [0, 0]))], [t2])
    y = mb.tensor("y", (1, 6, 6, 4), np.float32)
    mb.op("ADD", [t2, t2], [y])
    mb.output(y)
    model = mb.build()
    if backend == "cpu":
        it = Interpreter(model_content=model, backend="cpu")
        it.allocate_tensors()
        plan = it.memory_plan
        lo0, hi0 = plan.offsets[t0], plan.offsets[t0] + plan.sizes[t0]
        lo2, hi2 = plan.offsets[t2], plan.offsets[t2] + plan.sizes[t2]
        assert lo0 < hi2 and lo2 < hi0, "test premise: PAD's output must reuse ADD's arena bytes"
    for _ in range(2):  # and again, now that the arena holds the previous run's values
        check_op(model, [np.abs(f32(1, 8, 8, 4)) + 1], backend)


# --- CONCATENATION --------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_float(axis, backend):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for s in shapes[1:]:
        s[axis] = {0: 1, 1: 5, 2: 2, -1: 2, -3: 3}[axis]
    check_op(*single_op("CONCATENATION", [In(f32(*s)) for s in shapes], axis=axis), backend)


def test_concat_with_constant_input(backend):
    check_op(*single_op("CONCATENATION", [In(f32(1, 4)), C(f32(1, 3)), In(f32(1, 2))], axis=1), backend)


@pytest.mark.parametrize("act", ["RELU", "RELU6", "RELU_N1_TO_1", "TANH"])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8], ids=["float32", "int8", "uint8"])
def test_concat_declared_activation_runs_as_xnnpack(dtype, act, backend):
    """TFLite's CONCATENATION kernel refuses a declared fused activation in Prepare, but LiteRT's
    default path hands the node to XNNPACK, which drops the activation: gpulite runs it the same
    way (negative and large values in the inputs, so an applied clamp would show)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    xs = [f32(1, 4) * 5, f32(1, 4) * 5] if dtype == np.float32 else [q8(dtype, 1, 4), q8(dtype, 1, 4)]
    quant = None if dtype == np.float32 else (0.1, 3 if dtype == np.int8 else 130)
    mb = ModelBuilder()
    a, b = mb.input("a", (1, 4), dtype, quant=quant), mb.input("b", (1, 4), dtype, quant=quant)
    y = mb.tensor("y", (2, 4), dtype, quant=quant)
    mb.op("CONCATENATION", [a, b], [y], axis=0, fused_activation_function=act)
    mb.output(y)
    model = mb.build()
    ref = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    with pytest.raises(RuntimeError, match="activation"):
        ref.allocate_tensors()
    check_op(model, xs, backend)


def test_concat_then_relu_fused(backend):
    """A RELU after the concat is fused into it by gpulite and must still be applied."""
    mb = ModelBuilder()
    a, b = mb.input("a", (1, 4, 3), np.float32), mb.input("b", (1, 2, 3), np.float32)
    t = mb.tensor("t", (1, 6, 3), np.float32)
    mb.op("CONCATENATION", [a, b], [t], axis=1)
    y = mb.tensor("y", (1, 6, 3), np.float32)
    mb.op("RELU6", [t], [y])
    mb.output(y)
    model = mb.build()
    it = Interpreter(model_content=model)
    assert [n.activation for n in it.graph.nodes] == ["RELU6"], "test premise: the RELU6 was fused"
    check_op(model, [f32(1, 4, 3) * 5, f32(1, 2, 3) * 5], backend)


def test_concat_uint8_requantizes(backend):
    ins = [In(q8(np.uint8, 1, 2, 5), (0.1, 3)), In(q8(np.uint8, 1, 2, 4), (0.05, 200)),
           In(q8(np.uint8, 1, 2, 3), (0.2, 128))]
    check_op(*single_op("CONCATENATION", ins, axis=-1, out_quant=(0.2, 128)), backend)


def test_concat_uint8_rounding_ties(backend):
    # in_scale / out_scale = 0.5 with zp 0: odd codes land exactly on .5 (half away from zero).
    x = np.arange(256, dtype=np.uint8).reshape(1, 256)
    ins = [In(x, (0.5, 0)), In(x, (0.25, 1))]
    check_op(*single_op("CONCATENATION", ins, axis=0, out_quant=(1.0, 0)), backend)


def test_concat_int8_same_scale(backend):
    ins = [In(q8(np.int8, 2, 3), (0.3, -4)), In(q8(np.int8, 1, 3), (0.3, -4))]
    check_op(*single_op("CONCATENATION", ins, axis=0), backend)


def test_concat_int8_differing_scales():
    """LiteRT refuses int8 inputs whose scale differs; gpulite requantizes as for uint8."""
    a, b = q8(np.int8, 1, 64), q8(np.int8, 1, 64)
    model, feeds = single_op("CONCATENATION", [In(a, (0.1, 3)), In(b, (0.07, -20))], axis=1,
                             out_quant=(0.15, -5), out_shape=(1, 128))
    with pytest.raises(RuntimeError, match="CONCATENATION"):  # XNNPACK and the builtin kernel refuse it
        run_litert(model, feeds)
    got = run_gpulite(model, feeds, "cpu")[0]

    def requant(q, s, zp):  # TFLite ConcatenationWithScaling, float32 then round half away
        scale = np.float32(s) * (np.float32(1) / np.float32(0.15))
        v = (q.astype(np.float32) * scale + np.float32(-zp) * scale).astype(np.float64)
        return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) - 5, -128, 127).astype(np.int8)
    assert_same(got, np.concatenate([requant(a, 0.1, 3), requant(b, 0.07, -20)], axis=1))



# --- STRIDED_SLICE ---------------------------------------------------------------------------
X4 = f32(2, 5, 6, 3)
SLICES = {  # begin, end, strides, options
    "plain": ([0, 1, 2, 0], [2, 4, 6, 3], [1, 1, 1, 1], {}),
    "strided": ([0, 0, 1, 0], [2, 5, 6, 3], [1, 2, 3, 2], {}),
    "negative-indices": ([-2, -4, -5, -3], [-1, -1, 6, 3], [1, 1, 2, 1], {}),
    "negative-strides": ([1, 4, 5, 2], [0, 0, 0, -4], [-1, -1, -2, -1], {}),
    "reverse-all": ([-1, -1, -1, -1], [-7, -7, -7, -7], [-1, -1, -1, -1], {}),
    "out-of-range-clamped": ([-10, 2, 0, 1], [10, 100, 4, 50], [1, 1, 1, 1], {}),
    "empty": ([0, 3, 0, 0], [2, 2, 6, 3], [1, 1, 1, 1], {}),
    "begin-mask": ([1, 3, 4, 1], [2, 5, 6, 3], [1, 1, 1, 1], {"begin_mask": 0b1011}),
    "end-mask": ([0, 1, 2, 1], [1, 2, 3, 2], [1, 1, 1, 1], {"end_mask": 0b0110}),
    "masks-negative-stride": ([0, 2, 0, 0], [1, 0, 0, 0], [1, -1, -2, -1], {"begin_mask": 0b1100, "end_mask": 0b1110}),
    "shrink": ([1, 2, 0, -1], [2, 3, 6, 3], [1, 1, 1, 1], {"shrink_axis_mask": 0b1001}),
    "shrink-with-masks": ([0, -1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1],
                          {"shrink_axis_mask": 0b0010, "begin_mask": 0b1101, "end_mask": 0b1101}),
    "ellipsis-first": ([0, 1], [0, 3], [1, 1], {"ellipsis_mask": 0b01}),
    "ellipsis-middle": ([1, 0, 2], [2, 0, 3], [1, 1, 1], {"ellipsis_mask": 0b010}),
    "ellipsis-shrink": ([0, 1], [0, 2], [1, 1], {"ellipsis_mask": 0b01, "shrink_axis_mask": 0b10}),
    "new-axis": ([0, 0, 1, 0, 0], [0, 2, 4, 6, 3], [1, 1, 1, 1, 1], {"new_axis_mask": 0b00001, "end_mask": 0b11000}),
    "new-axis-inner": ([0, 0, 0, 0, 0], [2, 5, 0, 6, 3], [1, 1, 1, 1, 1], {"new_axis_mask": 0b00100}),
    "new-axis-ellipsis": ([0, 0, 1], [0, 0, 2], [1, 1, 1], {"new_axis_mask": 0b001, "ellipsis_mask": 0b010}),
    "ellipsis-then-new-axis": ([0, 0, 1], [0, 0, 3], [1, 1, 1], {"ellipsis_mask": 0b001, "new_axis_mask": 0b010}),
    "fewer-indices": ([1, 1], [2, 4], [1, 2], {}),
    "offset": ([0, 1, 2, 0], [2, 3, 3, 3], [1, 1, 1, 1], {"offset": True}),
    "offset-strided": ([0, 1, 0, 1], [1, 4, 6, 2], [1, 2, 3, 1], {"offset": True}),
}


@pytest.mark.parametrize("case", SLICES)
def test_strided_slice(case, backend):
    b, e, s, opts = SLICES[case]
    check_op(*single_op("STRIDED_SLICE", [In(X4), C(i32(*b)), C(i32(*e)), C(i32(*s))], **opts), backend)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_strided_slice_types(dtype, backend):
    x = q8(dtype, 4, 6) if dtype != np.int32 else RNG.integers(-1000, 1000, (4, 6)).astype(np.int32)
    quant = None if dtype == np.int32 else (0.1, 4)
    check_op(*single_op("STRIDED_SLICE", [In(x, quant), C(i32(3, 5)), C(i32(0, 0)), C(i32(-1, -2))],
                        end_mask=1), backend)


def test_strided_slice_shrink_out_of_range_is_shape_error():
    model, _ = single_op("STRIDED_SLICE", [In(X4), C(i32(0, 5)), C(i32(0, 6)), C(i32(1, 1))],
                         shrink_axis_mask=0b10, out_shape=(2, 6, 3))
    with pytest.raises(ShapeError, match="shrink index 5 is outside dim 1"):
        Interpreter(model_content=model).allocate_tensors()


def test_strided_slice_runtime_begin_is_rejected_at_allocate():
    model, _ = single_op("STRIDED_SLICE", [In(X4), In(i32(0, 0, 0, 0)), C(i32(1, 2, 2, 2)), C(i32(1, 1, 1, 1))])
    it = Interpreter(model_content=model)
    with pytest.raises(UnsupportedOpError, match="run time"):
        it.allocate_tensors()


# --- SLICE ----------------------------------------------------------------------------------
SLICE_CASES = {
    "plain": (f32(2, 5, 6), [1, 1, 2], [1, 3, 4]),
    "size-minus1": (f32(2, 5, 6), [0, 2, 1], [-1, -1, 3]),
    "int64": (f32(4, 7), np.array([1, 3], np.int64), np.array([2, -1], np.int64)),
    "uint8": (q8(np.uint8, 1, 6, 6, 2), [0, 1, 1, 0], [1, 4, 4, 2]),
}


@pytest.mark.parametrize("case", SLICE_CASES)
def test_slice(case, backend):
    x, b, s = SLICE_CASES[case]
    quant = (0.5, 10) if x.dtype == np.uint8 else None
    b = b if isinstance(b, np.ndarray) else i32(*b)
    s = s if isinstance(s, np.ndarray) else i32(*s)
    shape = tuple(d - lo if n == -1 else n for d, lo, n in zip(x.shape, b.tolist(), s.tolist(), strict=True))
    check_op(*single_op("SLICE", [In(x, quant), C(b), C(s)], out_shape=shape), backend)


def test_slice_out_of_bounds_is_shape_error():
    bad, _ = single_op("SLICE", [In(f32(4, 4)), C(i32(0, 0)), C(i32(2, 5))], out_shape=(2, 5))
    with pytest.raises(ShapeError, match="outside dim 1"):
        Interpreter(model_content=bad).allocate_tensors()


# --- TRANSPOSE -------------------------------------------------------------------------------
TRANSPOSES = {
    "nhwc-nchw": (f32(2, 3, 4, 5), [0, 3, 1, 2]),
    "2d": (f32(7, 3), [1, 0]),
    "5d": (f32(2, 1, 3, 2, 4), [4, 2, 0, 3, 1]),
    "int8": (q8(np.int8, 3, 4, 5), [2, 0, 1]),
    # five and six dims left after merging (an ONNX pixel shuffle): the 8-dim gather
    "5d-unmerged": (f32(2, 3, 2, 4, 3), [4, 2, 0, 3, 1]),
    "6d-pixel-shuffle-int8": (q8(np.int8, 1, 3, 2, 2, 5, 4), [0, 1, 4, 2, 5, 3]),
}


@pytest.mark.parametrize("case", TRANSPOSES)
def test_transpose(case, backend):
    x, perm = TRANSPOSES[case]
    quant = (0.5, 1) if x.dtype == np.int8 else None
    check_op(*single_op("TRANSPOSE", [In(x, quant), C(i32(*perm))]), backend)


# --- DEPTH_TO_SPACE / SPACE_TO_DEPTH ---------------------------------------------------------
@pytest.mark.parametrize("block,shape", [(2, (1, 3, 4, 8)), (3, (2, 2, 3, 18)), (2, (1, 24, 24, 4))])
def test_depth_to_space(block, shape, backend):
    check_op(*single_op("DEPTH_TO_SPACE", [In(f32(*shape))], block_size=block), backend)


@pytest.mark.parametrize("block,shape", [(2, (1, 4, 6, 3)), (3, (2, 6, 3, 2))])
def test_space_to_depth(block, shape, backend):
    check_op(*single_op("SPACE_TO_DEPTH", [In(f32(*shape))], block_size=block), backend)


def test_depth_space_int8(backend):
    check_op(*single_op("DEPTH_TO_SPACE", [In(q8(np.int8, 1, 2, 2, 8), (0.1, 0))], block_size=2), backend)
    check_op(*single_op("SPACE_TO_DEPTH", [In(q8(np.int8, 1, 4, 4, 2), (0.1, 0))], block_size=2), backend)


# --- GATHER ----------------------------------------------------------------------------------
GATHERS = {
    "axis0-const": (f32(5, 3), C(i32(4, 0, 2, 2)), 0),
    "axis1-runtime": (f32(2, 6, 3), In(i32(5, 0, 3)), 1),
    "axis-neg-int64": (f32(2, 3, 7), In(np.array([[6, 1], [0, 0]], np.int64)), -1),
    "2d-indices-axis0": (f32(6, 2, 2), In(i32([1, 5, 0], [3, 3, 2])), 0),
    "scalar-index": (f32(4, 3), C(np.array(2, np.int32)), 0),
    "int8": (q8(np.int8, 4, 5), In(i32(3, 1)), 0),
}


@pytest.mark.parametrize("case", GATHERS)
def test_gather(case, backend):
    params, idx, axis = GATHERS[case]
    quant = (0.3, 2) if params.dtype == np.int8 else None
    check_op(*single_op("GATHER", [In(params, quant), idx], axis=axis), backend)


def test_gather_index_out_of_range_fails_invoke():
    model, feeds = single_op("GATHER", [In(f32(4, 3)), In(i32(0, 1))], axis=0)
    for bad in (i32(0, 4), i32(-1, 0)):
        with pytest.raises(RuntimeError):
            run_litert(model, [feeds[0], bad])
        with pytest.raises(IndexError, match="out of range"):
            run_gpulite(model, [feeds[0], bad], "cpu")


def test_gather_constant_index_out_of_range_fails_allocate():
    bad, _ = single_op("GATHER", [In(f32(4, 3)), C(i32(0, 9))], axis=0, out_shape=(2, 3))
    with pytest.raises(ShapeError, match="out of range"):
        Interpreter(model_content=bad).allocate_tensors()


# --- ARG_MAX / ARG_MIN -----------------------------------------------------------------------
ARGS = {
    "last-axis-int64": (f32(2, 3, 7), i32(2), "INT64"),
    "axis1-int32": (f32(2, 5, 4), i32(1), "INT32"),
    "negative-axis": (f32(3, 4, 5), i32(-3), "INT32"),
    "int64-axis-input": (f32(6, 2), np.array([0], np.int64), "INT64"),
    "ties": (np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 5]], np.float32), i32(1), "INT32"),
    "uint8": (q8(np.uint8, 3, 9), i32(1), "INT32"),
}


def _arg_edges() -> dict:
    """Around the GPU kernel's edges (arg.wgsl: 256 threads a workgroup, about 16 elements a
    thread): long axes last and in the middle, not powers of two; ties across threads; NaN
    first, later and everywhere (TFLite keeps index 0 when element 0 is NaN and skips later
    NaNs); -inf everywhere; int8 and int32 inputs."""
    rng = np.random.default_rng(11)
    long_last = rng.standard_normal((3, 5000)).astype(np.float32)
    long_last[1, [700, 4000, 4999]] = 50.0  # a three-way tie: the first wins
    middle = rng.standard_normal((2, 3001, 7)).astype(np.float32)
    nans = rng.standard_normal((5, 600)).astype(np.float32)
    nans[0, 0] = np.nan
    nans[1, 3] = np.nan
    nans[2] = np.nan
    nans[3] = -np.inf
    nans[4, 599] = np.inf
    return {
        "long-last-ties": (long_last, i32(1), "INT32"),
        "long-middle-int64": (middle, i32(1), "INT64"),
        "many-short": (rng.standard_normal((4000, 3)).astype(np.float32), i32(1), "INT32"),
        "nan-inf": (nans, i32(1), "INT32"),
        "int32-long": (rng.integers(-5, 5, (3, 1000)).astype(np.int32), i32(1), "INT32"),
        "int8-middle": (rng.integers(-128, 128, (2, 700, 5)).astype(np.int8), i32(1), "INT32"),
    }


ARG_EDGES = _arg_edges()


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("case", ARG_EDGES)
def test_arg_max_min_kernel_edges(op, case, backend):
    x, axis, out_type = ARG_EDGES[case]
    quant = (0.1, 3) if x.dtype == np.int8 else None
    dtype = np.int32 if out_type == "INT32" else np.int64
    check_op(*single_op(op, [In(x, quant), C(axis)], out_dtype=dtype, out_quant=None, output_type=out_type),
             backend)


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("case", ARGS)
def test_arg_max_min(op, case, backend):
    x, axis, out_type = ARGS[case]
    quant = (0.1, 3) if x.dtype == np.uint8 else None
    dtype = np.int32 if out_type == "INT32" else np.int64
    check_op(*single_op(op, [In(x, quant), C(axis)], out_dtype=dtype, out_quant=None, output_type=out_type),
             backend)


# --- shapes after resize_tensor_input --------------------------------------------------------
def test_resized_input_propagates_through_layout_ops(backend):
    """Batch 1 -> 3 through PAD, STRIDED_SLICE, RESHAPE(-1), CONCATENATION, TRANSPOSE, GATHER."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 2), np.float32)
    p = mb.tensor("p", (1, 6, 6, 2), np.float32)
    mb.op("PAD", [x, mb.const("pads", i32([0, 0], [1, 1], [1, 1], [0, 0]))], [p])
    s = mb.tensor("s", (1, 3, 6, 2), np.float32)
    mb.op("STRIDED_SLICE", [p, mb.const("b", i32(0, 0, 0)), mb.const("e", i32(0, 6, 0)),
                            mb.const("st", i32(1, 2, 1))], [s], begin_mask=0b101, end_mask=0b101)
    r = mb.tensor("r", (1, 36), np.float32)
    mb.op("RESHAPE", [s, mb.const("shape", i32(-1, 36))], [r])
    c = mb.tensor("c", (1, 72), np.float32)
    mb.op("CONCATENATION", [r, r], [c], axis=-1)
    t = mb.tensor("t", (72, 1), np.float32)
    mb.op("TRANSPOSE", [c, mb.const("perm", i32(1, 0))], [t])
    g = mb.tensor("g", (3, 1), np.float32)
    mb.op("GATHER", [t, mb.const("idx", i32(0, 40, 71))], [g], axis=0)
    mb.output(g)
    check_op(mb.build(), [f32(3, 4, 4, 2)], backend)
