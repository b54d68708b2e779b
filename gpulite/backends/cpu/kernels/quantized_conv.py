"""Quantized CONV_2D and DEPTHWISE_CONV_2D (int8 per-channel or per-tensor, uint8 per-tensor).

The integer accumulator ``sum((x - zp_in) * (w - zp_w)) + bias`` is computed exactly in
float64 (every product and partial sum is an integer far below 2**53), reusing the float
kernels' im2col and tap loops: the input is padded with its own zero point and multiplied
by ``w - zp_w``, and ``-zp_in * sum(w - zp_w)`` per output channel is added afterwards, so
padded pixels contribute nothing, as in TFLite. The float64 result is then cast to int64
and rescaled as LiteRT's default interpreter rescales it (:func:`conv_rescale`): the convolutions
its XNNPACK delegate takes (:func:`xnnpack_conv`: int8 codes, or uint8 ones, a constant bias, a
fused activation XNNPACK has; its TRANSPOSE_CONV too, in ``transpose_conv.py``, int8 or uint8)
with XNNPACK's float32 requantization (:class:`gpulite.backends.cpu.quant.Fp32Requantizer`), the
rest as its builtin optimized kernels do: ruy's rounding for CONV_2D, LiteRT's NEON output
stage for int8 DEPTHWISE_CONV_2D (:class:`gpulite.backends.cpu.quant.NeonRequantizer`), TFLite's
fixed-point ``MultiplyByQuantizedMultiplier`` (:class:`gpulite.backends.cpu.quant.Requantizer`)
for uint8 DEPTHWISE_CONV_2D, grouped CONV_2D and the 16x8 mode. Both ops are registered here, choosing
the float32 kernel of :mod:`.conv` / :mod:`.depthwise`, the hybrid one of :mod:`.hybrid`
(float input, int8 filter) or the integer one by dtypes.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.conv import ConvGemm, conv_geometry, float_conv_2d, group_gemms
from gpulite.backends.cpu.kernels.depthwise import (
    depthwise_geometry,
    depthwise_plan,
    float_depthwise_conv_2d,
    plan_runner,
)
from gpulite.backends.cpu.kernels.hybrid import hybrid_conv_2d, hybrid_depthwise_conv_2d
from gpulite.backends.cpu.quant import (
    Fp32Requantizer,
    NeonRequantizer,
    Requantizer,
    output_bounds,
    per_tensor,
    quantize_multipliers,
    xnnpack_scales,
)
from gpulite.backends.kernels import register_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.model.opdefs import FusedActivation, Op
from gpulite.model.schema_gen import TensorType

_QTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
_XNNPACK_ACTIVATIONS = (FusedActivation.NONE, FusedActivation.RELU, FusedActivation.RELU_N1_TO_1, FusedActivation.RELU6)


def rescale_factors(node, ctx, channels: int, axis: int, float_product: bool | None = None,
                    inputs: tuple[int, int] = (0, 1)) -> tuple[np.ndarray, np.ndarray, int, int, int, int]:
    """The real rescale factors of a quantized conv-like node and its zero points and bounds.

    Follows TFLite's ``PopulateConvolutionQuantizationParams``: per-channel factors are
    ``double(s_in) * double(s_w[c]) / double(s_out)``; the legacy per-tensor path
    (``GetQuantizedConvolutionMultipler``: uint8 convs, per-tensor fully connected) uses
    ``double(float(s_in * s_w)) / double(s_out)``, the float32 product first.
    ``float_product`` picks the legacy formula (default: for uint8 input). ``inputs`` are the
    input and filter indices (TRANSPOSE_CONV's are 2 and 1).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, int, int, int, int)
        The factors (float64, length 1 or ``channels``), the filter zero points broadcastable
        along ``axis`` of the filter (int64, length 1 or ``channels``), the input and output
        zero points, and the output's clamp range (``output_bounds``).
    """
    x, w, out = ctx.in_info(inputs[0]), ctx.in_info(inputs[1]), ctx.out_info(0)
    sixteen = x.dtype == np.int16 and w.dtype == np.int8  # the 16x8 mode: int64 accumulators
    if (x.dtype not in _QTYPES and not sixteen) or w.dtype not in _QTYPES or out.dtype != x.dtype:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"quantized path expects int8/uint8 input, filter "
                                 f"and output (or int16 with int8 filter), got {x.dtype}, {w.dtype} -> {out.dtype}")
    s_in, zp_in = per_tensor(node, x, "input")
    s_out, zp_out = per_tensor(node, out, "output")
    q = w.quant
    if q is None or q.scale.size not in (1, channels) or (q.scale.size > 1 and q.axis != axis):
        got = "none" if q is None else f"{q.scale.size} scales on axis {q.axis}"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"filter quantization must be per tensor or "
                                 f"{channels} scales on axis {axis}, got {got}")
    if float_product is None:
        float_product = x.dtype == np.uint8
    if x.dtype == np.uint8 and q.scale.size != 1:
        raise UnsupportedOpError(node.op, node.index, "cpu", "uint8 ops take per-tensor filters only")
    if float_product:
        real = np.array([float(np.float32(s_in) * np.float32(q.scale[0])) / float(np.float32(s_out))])
    else:
        real = float(np.float32(s_in)) * q.scale.astype(np.float64) / float(np.float32(s_out))
    lo, hi = output_bounds(node, out)
    return real, q.zero_point.astype(np.int64), zp_in, zp_out, lo, hi


def requantizer(node, ctx, channels: int, axis: int, shape: tuple[int, ...],
                float_product: bool | None = None, single_rounding: bool = False, inputs: tuple[int, int] = (0, 1),
                int64: bool | None = None) -> tuple[Requantizer, np.ndarray, int]:
    """The output rescale of a quantized conv-like node (:func:`rescale_factors`), its filter
    zero points and the input's.

    ``single_rounding`` selects the rescale LiteRT's reference FULLY_CONNECTED uses (see
    :mod:`gpulite.backends.cpu.quant`). ``int64`` selects the int64
    ``MultiplyByQuantizedMultiplier`` (default: for int16 input, as the 16x8 convs use;
    LiteRT's 16x8 FULLY_CONNECTED rounds once with the full multiplier instead).

    Returns
    -------
    (Requantizer, numpy.ndarray, int)
        The rescaler for accumulators of ``shape``, the filter zero points broadcastable
        along ``axis`` of the filter (length 1 or ``channels``), and the input zero point.
    """
    real, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, channels, axis, float_product, inputs)
    sixteen = ctx.in_info(inputs[0]).dtype == np.int16
    mult, shift = quantize_multipliers(real)
    rq = Requantizer(shape, mult, shift, zp_out, lo, hi, single_rounding, int64=sixteen if int64 is None else int64)
    return rq, zp_w, zp_in


def xnnpack_conv(node, ctx, zp_w: np.ndarray, inputs: tuple[int, int] = (0, 2)) -> bool:
    """Whether default LiteRT runs this CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV in its
    XNNPACK delegate (``qs8`` / ``qs8_qc8w`` / ``qu8`` convolutions and deconvolutions): int8
    input with filter zero points 0, or uint8 input (any filter zero point) whose filter's
    quantized dimension is 0 (the delegate declines a uint8 filter stored with another: a
    DEPTHWISE_CONV_2D's channel axis 3, say); the bias constant (or none); a fused activation
    XNNPACK has as an output range (not TANH or SIGN_BIT, which the delegate declines).
    ``inputs``: the input's and the bias's indices (TRANSPOSE_CONV's are 2 and 3). Measured with
    ai-edge-litert 2.3 (tests/ops/test_conv.py: the interpreter's DELEGATE node, and rescaling
    those ops as XNNPACK does makes them equal default LiteRT's outputs on the op suite's cases
    and every node of tests/data's full-int8 models checked)."""
    x, b = inputs
    dtype = ctx.in_info(x).dtype
    codes = (dtype == np.int8 and not np.any(zp_w)) or (dtype == np.uint8 and ctx.in_info(1).quant.axis == 0)
    return (codes and node.activation in _XNNPACK_ACTIVATIONS
            and (not ctx.has_input(b) or ctx.const(b) is not None))


def conv_rescale(node, ctx, zp_w: np.ndarray) -> str:
    """How default LiteRT rescales this integer CONV_2D / DEPTHWISE_CONV_2D: ``"fp32"``, XNNPACK's
    float32 requantization where its delegate takes the op (:func:`xnnpack_conv`); else its
    builtin optimized kernel's: an ungrouped 8-bit CONV_2D ``"ruy"`` (im2col and
    ``cpu_backend_gemm``: ruy's rounding, halves up on every channel,
    ``NeonRequantizer(all_channels=True)``), an int8 DEPTHWISE_CONV_2D ``"neon"`` (its general
    path's NEON output stage: halves up in whole blocks of 8 channels, the rest as the reference
    kernel, :class:`gpulite.backends.cpu.quant.NeonRequantizer`); ``"double"``, the reference
    kernels' ``MultiplyByQuantizedMultiplier``, for uint8 DEPTHWISE_CONV_2D (whose optimized
    kernel rounds so), a grouped CONV_2D (the optimized kernel has no groups) and ``"int64"`` for
    the 16x8 mode. Measured with ai-edge-litert 2.3 on x86 (``OpResolverType.BUILTIN`` against
    ``BUILTIN_REF``, power-of-two scales making ties: tests/ops/test_conv.py)."""
    x, w = ctx.in_info(0), ctx.in_info(1)
    if x.dtype == np.int16:
        return "int64"
    if xnnpack_conv(node, ctx, zp_w):
        return "fp32"
    if node.op == Op.CONV_2D:
        return "ruy" if x.shape[-1] == w.shape[-1] else "double"
    return "neon" if x.dtype == np.int8 else "double"


def xnnpack_transpose_conv(node, ctx, zp_w: np.ndarray) -> bool:
    """Whether default LiteRT runs this TRANSPOSE_CONV in XNNPACK: as :func:`xnnpack_conv`, and
    the output shape a constant (the delegate declines one computed at run time, as U-Nets'
    ``tf.shape``-built ones are: measured on corpus/unet_int8, whose TRANSPOSE_CONV then runs
    the builtin kernel; gpulite folds those at load, ``TensorInfo.folded``)."""
    shape = ctx.in_info(0)
    return shape.is_const and not shape.folded and xnnpack_conv(node, ctx, zp_w, inputs=(2, 3))


def transpose_conv_rescale(node, ctx, zp_w: np.ndarray) -> str:
    """How default LiteRT rescales this integer TRANSPOSE_CONV: ``"fp32"``, XNNPACK's float32
    requantization (:func:`xnnpack_transpose_conv`); else its builtin kernel, the optimized one
    (``TransposeConvV2``): ``"neon"``, TFLite's optimized per-channel ``Quantize``
    (:class:`gpulite.backends.cpu.quant.NeonRequantizer`), for int8 input, and for int16 input
    with an int32 ``quantized_bias_type`` option (TensorFlow's converter writes it when asked
    for int32 biases) and zero points 0; other 16x8 ones run the reference kernel: ``"int64"``,
    its int64 ``MultiplyByQuantizedMultiplier``. uint8 input: ``"neon16"``, the per-tensor
    ``Quantize``, NEON rounding (halves up in both steps) on the flat output's whole blocks of 16
    elements, ``MultiplyByQuantizedMultiplier`` on the rest (``NeonRequantizer(flat16=True)``;
    measured with power-of-two scales on output sizes 16k + 0, 4, 8, 12, tests/ops/test_conv.py)."""
    if xnnpack_transpose_conv(node, ctx, zp_w):
        return "fp32"
    if ctx.in_info(2).dtype == np.uint8:
        return "neon16"
    if ctx.in_info(2).dtype != np.int16:
        return "neon"
    zero = not (np.any(zp_w) or np.any(ctx.in_info(2).quant.zero_point) or np.any(ctx.out_info(0).quant.zero_point))
    int32_bias = int(getattr(node.options, "quantized_bias_type", 0)) == TensorType.INT32
    return "neon" if int32_bias and zero else "int64"


def transpose_conv_requantizer(node, ctx, channels: int, shape: tuple[int, ...]):
    """The output rescale of an integer TRANSPOSE_CONV as default LiteRT does it
    (:func:`transpose_conv_rescale`), its filter zero points and the input's zero point."""
    real, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, channels, 0, inputs=(2, 1))
    rq = default_rescaler(transpose_conv_rescale(node, ctx, zp_w), ctx, shape, real, zp_out, lo, hi, x_index=2)
    return (rq, zp_w, zp_in) if rq is not None else requantizer(node, ctx, channels, 0, shape, inputs=(2, 1))


def conv_requantizer(node, ctx, channels: int, axis: int, shape: tuple[int, ...]):
    """The output rescale of an integer CONV_2D / DEPTHWISE_CONV_2D as default LiteRT does it
    (:func:`conv_rescale`), its filter zero points and the input's zero point."""
    real, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, channels, axis)
    rq = default_rescaler(conv_rescale(node, ctx, zp_w), ctx, shape, real, zp_out, lo, hi)
    return (rq, zp_w, zp_in) if rq is not None else requantizer(node, ctx, channels, axis, shape)


def default_rescaler(form: str, ctx, shape: tuple[int, ...], real: np.ndarray, zp_out: int, lo: int, hi: int,
                     x_index: int = 0) -> Fp32Requantizer | NeonRequantizer | None:
    """The rescaler of ``form`` (:func:`conv_rescale`, :func:`transpose_conv_rescale`,
    ``fully_connected.fc_rescale``) where default LiteRT leaves TFLite's reference fixed point:
    ``"fp32"`` XNNPACK's float32 requantization (the input at ``x_index``), ``"ruy"`` / ``"neon"``
    / ``"neon16"`` the NEON rounding of its optimized builtin kernels; None for the reference
    forms (:func:`requantizer`)."""
    if form == "fp32":
        return Fp32Requantizer(shape, conv_scales(ctx, x_index), zp_out, lo, hi)
    if form in ("ruy", "neon", "neon16"):
        return NeonRequantizer(shape, *quantize_multipliers(real), zp_out, lo, hi, all_channels=form == "ruy",
                               flat16=form == "neon16")
    return None


def conv_scales(ctx, x_index: int = 0) -> np.ndarray:
    """XNNPACK's float32 requantization scales of a conv node (one per filter scale; the
    input at ``x_index``)."""
    x, w, out = ctx.in_info(x_index), ctx.in_info(1), ctx.out_info(0)
    return xnnpack_scales(x.quant.scale[0], w.quant.scale, out.quant.scale[0])


def epilogue(ctx, acc64: np.ndarray, corr: np.ndarray, rq: Requantizer, out: np.ndarray, bias_index: int = 2):
    """Cast the exact float64 sums to int64, add the zero-point correction and bias, rescale."""
    acc = np.empty(acc64.shape, np.int64)
    bias = ctx.input(bias_index) if ctx.has_input(bias_index) else None
    if bias is not None and bias.dtype not in (np.int32, np.int64):
        raise UnsupportedOpError(ctx.node.op, ctx.node.index, "cpu", f"quantized bias must be int32, got {bias.dtype}")

    def finish() -> None:
        np.copyto(acc, acc64, casting="unsafe")
        np.add(acc, corr, out=acc)
        if bias is not None:
            np.add(acc, bias, out=acc)
        rq(acc, out)
    return finish


def quantized_conv_2d(node, ctx):
    """CONV_2D on int8/uint8 tensors; see the module docstring."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    win, groups = conv_geometry(node, x.shape, w.shape, out.shape)
    o = w.shape[0]
    if ctx.const(1) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "quantized conv needs a constant filter")
    rq, zp_w, zp_in = conv_requantizer(node, ctx, o, 0, out.shape)
    wq = w.astype(np.int64) - zp_w.reshape(-1, 1, 1, 1)
    corr = -zp_in * wq.reshape(o, -1).sum(axis=1)  # per output channel: over its group's channels
    acc64 = np.empty(out.shape, np.float64)
    if groups != 1:  # as TFLite's reference ConvPerChannel: each output channel sums its group
        gemms = group_gemms(win, groups, x, acc64, wq, zp_in, np.float64)
    else:
        gemm = ConvGemm(win, x, acc64, zp_in, np.float64)
        gemms = [gemm.bind(np.ascontiguousarray(wq.reshape(o, -1).T, dtype=np.float64))]
    finish = epilogue(ctx, acc64, corr, rq, out)

    def run() -> None:
        for gemm in gemms:
            gemm()
        finish()
    return run


def quantized_depthwise_conv_2d(node, ctx):
    """DEPTHWISE_CONV_2D on int8/uint8 tensors; see the module docstring."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    win, mult = depthwise_geometry(node, x.shape, w.shape, out.shape)
    co = w.shape[3]
    if ctx.const(1) is None:
        raise UnsupportedOpError(node.op, node.index, "cpu", "quantized depthwise conv needs a constant filter")
    rq, zp_w, zp_in = conv_requantizer(node, ctx, co, 3, out.shape)
    wq = w[0].astype(np.int64) - zp_w  # (KH, KW, C*M); zero points broadcast along channels
    corr = -zp_in * wq.reshape(-1, co).sum(axis=0)
    acc64 = np.empty(out.shape, np.float64)
    phased, plans, fn = depthwise_plan(win, x, acc64, mult, wq, None, zp_in, np.float64)
    finish = epilogue(ctx, acc64, corr, rq, out)
    taps = plan_runner(phased, plans, fn)

    def run() -> None:
        taps()
        finish()
    return run


def _hybrid(ctx) -> bool:
    """Float input with an int8 filter: dynamic-range quantization (:mod:`.hybrid`)."""
    return ctx.input(0).dtype == np.float32 and ctx.in_info(1).dtype == np.int8


@register_kernel(Op.CONV_2D, "cpu")
def conv_2d(node, ctx):
    """CONV_2D: the float32 kernel (:mod:`.conv`), the hybrid one or the integer one, by dtypes."""
    if _hybrid(ctx):
        x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
        win, groups = conv_geometry(node, x.shape, w.shape, out.shape)
        return hybrid_conv_2d(node, ctx, win, groups)
    if ctx.input(0).dtype == np.float32:
        return float_conv_2d(node, ctx)
    return quantized_conv_2d(node, ctx)


@register_kernel(Op.DEPTHWISE_CONV_2D, "cpu")
def depthwise_conv_2d(node, ctx):
    """DEPTHWISE_CONV_2D: the float32 kernel (:mod:`.depthwise`), the hybrid one or the integer one."""
    if _hybrid(ctx):
        x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
        win, mult = depthwise_geometry(node, x.shape, w.shape, out.shape)
        return hybrid_depthwise_conv_2d(node, ctx, win, mult)
    if ctx.input(0).dtype == np.float32:
        return float_depthwise_conv_2d(node, ctx)
    return quantized_depthwise_conv_2d(node, ctx)
