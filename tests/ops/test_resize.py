"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR against LiteRT: every align_corners /
half_pixel_centers combination, upsampling, downsampling, odd ratios and 8-bit types."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.backends.cpu.kernels.resize import nearest_axis
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op, run_gpulite, run_litert
from tests.ops.single_op import C, In, single_op

RNG = np.random.default_rng(99)

SIZES = {  # (input h, w) -> (output h, w)
    "up2x": ((4, 5), (8, 10)),
    "up-odd": ((3, 3), (7, 5)),
    "down": ((8, 10), (3, 4)),
    "down-odd": ((26, 39), (22, 33)),
    "same": ((5, 6), (5, 6)),
    "to-1x1": ((4, 6), (1, 1)),
    "from-1x1": ((1, 1), (3, 4)),
    "mixed": ((6, 4), (3, 9)),
}
MODES = {"default": (False, False), "align": (True, False), "half": (False, True)}


def _image(dtype, hw, c=3, n=2) -> np.ndarray:
    if dtype == np.float32:
        return RNG.standard_normal((n, *hw, c)).astype(np.float32)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, (n, *hw, c)).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", SIZES)
def test_resize_bilinear(size, mode, backend):
    (hw, out), (align, half) = SIZES[size], MODES[mode]
    ins = [In(_image(np.float32, hw)), C(np.array(out, np.int32))]
    check_op(*single_op("RESIZE_BILINEAR", ins, align_corners=align, half_pixel_centers=half), backend)


# (input h, w) -> (output h, w), channels: sizes where rounding float32 in another order than
# XNNPACK's moves some outputs by an ulp.
BIT_SIZES = {
    "up2x": ((6, 5), (12, 10), 8),  # the cpu's 2x path (compiled loops, or numpy slices)
    "up16x": ((4, 4), (64, 64), 3),  # torch_lraspp_pt2e_int8's last op
    "up-odd": ((7, 9), (100, 51), 5),
    "down-odd": ((26, 39), (22, 33), 4),
    "mixed": ((13, 17), (40, 11), 6),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", BIT_SIZES)
def test_resize_bilinear_float_bit_equal(size, mode, backend):
    """float32 bilinear is LiteRT's default path (XNNPACK's ``f32-ibilinear``) bit for bit: its
    per-axis source indices and weights in float32, then ``t = tl + (tr - tl) * ax``, ``b``
    likewise, ``t + (b - t) * ay``, each step rounded (on the GPU too: no contraction to FMA)."""
    (hw, out, c), (align, half) = BIT_SIZES[size], MODES[mode]
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, *hw, c)) * rng.choice([0.01, 1.0, 300.0], (2, *hw, c))).astype(np.float32)
    model, ins = single_op("RESIZE_BILINEAR", [In(x), C(np.array(out, np.int32))], align_corners=align,
                           half_pixel_centers=half)
    want, got = run_litert(model, ins)[0], run_gpulite(model, ins, backend)[0]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    differ = got != want
    assert not differ.any(), (f"{int(differ.sum())} of {differ.size} outputs differ from LiteRT's, "
                              f"max {np.abs(got.astype(np.float64) - want).max():g}")


def _size_at_run_time(x: np.ndarray, out: tuple[int, int], align: bool, half: bool, quant=None) -> bytes:
    """RESIZE_BILINEAR whose size is ``SHAPE(x)[1:3] + (out - in)``, computed at run time (gpulite
    folds it at load; XNNPACK declines it)."""
    mb = ModelBuilder()
    xi = mb.input("x", x.shape, x.dtype, quant=quant)
    shape, hw, size = mb.tensor("shape", (4,), np.int32), mb.tensor("hw", (2,), np.int32), mb.tensor(
        "size", (2,), np.int32)
    mb.op("SHAPE", [xi], [shape], out_type="INT32")
    mb.op("SLICE", [shape, mb.const("begin", np.array([1], np.int32)), mb.const("len", np.array([2], np.int32))],
          [hw])
    mb.op("ADD", [hw, mb.const("grow", np.array(out, np.int32) - np.array(x.shape[1:3], np.int32))], [size])
    y = mb.tensor("y", (x.shape[0], *out, x.shape[3]), x.dtype, quant=quant)
    mb.op("RESIZE_BILINEAR", [xi, size], [y], align_corners=align, half_pixel_centers=half)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [*BIT_SIZES, "same"])
def test_resize_bilinear_size_at_run_time_bit_equal(size, mode, backend):
    """A size computed at run time: XNNPACK declines the node and default LiteRT runs its optimized
    builtin kernel (``ResizeBilinear2x2``'s halved sums for exact 2x without align / half pixel,
    else ``out += in * s`` from zero over the four corners); gpulite follows it bit for bit (it
    took XNNPACK's blend there, ulps off)."""
    hw, out, c = BIT_SIZES[size] if size != "same" else ((5, 6), (5, 6), 3)
    align, half = MODES[mode]
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, *hw, c)) * rng.choice([0.01, 1.0, 300.0], (2, *hw, c))).astype(np.float32)
    model = _size_at_run_time(x, out, align, half)
    want, got = run_litert(model, [x])[0], run_gpulite(model, [x], backend)[0]
    assert got.shape == want.shape, (got.shape, want.shape)
    differ = got != want
    assert not differ.any(), (f"{int(differ.sum())} of {differ.size} outputs differ from LiteRT's, "
                              f"max {np.abs(got.astype(np.float64) - want).max():g}")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", ["up2x", "up8x", "up-odd", "down-odd"])
def test_resize_bilinear_8bit_size_at_run_time(size, mode, dtype, backend):
    """8-bit with a size computed at run time: LiteRT's builtin kernels, exact (int8: the Q10
    ResizeBilinearInteger; uint8: ResizeBilinearGenericSmallChannel's float sum plus 0.5, truncated,
    but its 8x half-pixel case, which rounds as XNNPACK's Q11 blend); was XNNPACK's blend, up to 7
    codes off."""
    hw, out, c = {"up2x": ((6, 5), (12, 10), 8), "up8x": ((4, 4), (32, 32), 8), "up-odd": ((7, 9), (100, 51), 5),
                  "down-odd": ((26, 39), (22, 33), 4)}[size]
    info = np.iinfo(dtype)
    # seed 9: uint8 up-odd half has a sum exactly on .5, where a GPU compiler that moves the 0.5
    # into the last add (Mesa's) rounds it down
    x = np.random.default_rng(9).integers(info.min, info.max + 1, (2, *hw, c)).astype(dtype)
    check_op(_size_at_run_time(x, out, *MODES[mode], quant=(0.05, 3)), [x], backend)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", SIZES)
def test_resize_nearest(size, mode, dtype, backend):
    (hw, out), (align, half) = SIZES[size], MODES[mode]
    quant = None if dtype == np.float32 else (0.05, 3)
    ins = [In(_image(dtype, hw), quant), C(np.array(out, np.int32))]
    check_op(*single_op("RESIZE_NEAREST_NEIGHBOR", ins, align_corners=align, half_pixel_centers=half), backend)


def test_nearest_8bit_fixed_point_differs_from_float():
    """Premise of the down-odd case: 26->22 and 39->33 are sizes where LiteRT's 8-bit
    16.16 fixed-point scale picks other source pixels than the float formula."""
    for n_in, n_out in ((26, 22), (39, 33)):
        assert (nearest_axis(n_in, n_out, False, False, True) != nearest_axis(n_in, n_out, False, False, False)).any()


def test_resize_bilinear_both_flags_rejected():
    """TFLite's bilinear Prepare refuses half_pixel_centers with align_corners (only the XNNPACK
    delegate runs it); gpulite refuses it at allocate_tensors."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    model, _ = single_op("RESIZE_BILINEAR", [In(_image(np.float32, (4, 5))), C(np.array((7, 3), np.int32))],
                         align_corners=True, half_pixel_centers=True, out_shape=(2, 7, 3, 3))
    with pytest.raises(RuntimeError, match="align_corners must be False"):
        LiteRT(model_content=model,
               experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES).allocate_tensors()
    with pytest.raises(UnsupportedOpError, match="align_corners=False"):
        Interpreter(model_content=model).allocate_tensors()


def test_resize_nearest_both_flags(backend):
    # Unlike bilinear, TFLite's nearest-neighbour kernel runs this pair (align scale, half offset).
    ins = [In(_image(np.float32, (4, 5))), C(np.array((7, 3), np.int32))]
    check_op(*single_op("RESIZE_NEAREST_NEIGHBOR", ins, align_corners=True, half_pixel_centers=True), backend)


def test_resize_bilinear_large_channels(backend):
    """The shape of the MediaPipe upsampling layers: 6x6x96 -> 12x12x96, half-pixel."""
    ins = [In(_image(np.float32, (6, 6), c=96, n=1)), C(np.array((12, 12), np.int32))]
    check_op(*single_op("RESIZE_BILINEAR", ins, half_pixel_centers=True), backend)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", SIZES)
def test_resize_bilinear_quantized(size, mode, dtype, backend):
    """8-bit bilinear, bit-exact with LiteRT's default path (XNNPACK's Q11 fixed point, which
    differs from TFLite's reference kernel by one code here and there); int16 (16x8 mode) with
    TFLite's Q10 integer kernel."""
    (hw, out), (align, half) = SIZES[size], MODES[mode]
    quant = (0.05, {np.int8: 3, np.uint8: 131, np.int16: 0}[dtype])
    ins = [In(_image(dtype, hw, c=5), quant), C(np.array(out, np.int32))]
    check_op(*single_op("RESIZE_BILINEAR", ins, align_corners=align, half_pixel_centers=half), backend)


def test_resize_follows_resized_input(backend):
    """The output size is the constant ``size``; batch and channels follow the input."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 3), np.float32)
    y = mb.tensor("y", (1, 8, 6, 3), np.float32)
    mb.op("RESIZE_BILINEAR", [x, mb.const("size", np.array((8, 6), np.int32))], [y], half_pixel_centers=True)
    z = mb.tensor("z", (1, 3, 5, 3), np.float32)
    mb.op("RESIZE_NEAREST_NEIGHBOR", [y, mb.const("size2", np.array((3, 5), np.int32))], [z])
    mb.output(z)
    check_op(mb.build(), [_image(np.float32, (5, 7), c=2, n=3)], backend)
