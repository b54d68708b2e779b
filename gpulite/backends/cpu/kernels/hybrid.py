"""Dynamic-range ("hybrid") CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and BATCH_MATMUL.

What ``TFLiteConverter`` writes with ``optimizations=[DEFAULT]`` and no representative
dataset: float32 activations, int8 constant weights (per-tensor or per-channel scales, zero
point 0), float32 bias. LiteRT quantizes the float input at run time, multiplies in int32
and scales the sums back to float. Which quantization runs depends on the kernel that takes
the op in LiteRT's default configuration (measured against LiteRT 2.3):

- CONV_2D, FULLY_CONNECTED, BATCH_MATMUL and TRANSPOSE_CONV (:mod:`.transpose_conv`) go to
  the XNNPACK delegate, which quantizes asymmetrically ("qd8") whatever
  ``asymmetric_quantize_inputs`` says: per image for a conv (per pixel for a pointwise conv,
  which it runs as a fully connected op), per row of ``depth`` values otherwise, with
  ``xnn_f32_qd8_asymmetric_quantization_params`` (:func:`quantize_xnnpack`).
- DEPTHWISE_CONV_2D runs TFLite's builtin ``EvalHybridPerChannel``: per image, with
  ``AsymmetricQuantizeFloats`` (:func:`quantize_tflite`); it needs per-channel filter scales.

Either way the quantized input minus its zero point is held as float64, so the products
and sums (the int32 accumulator) are exact, computed with the float kernels' im2col, tap
loops and BLAS; each sum is then scaled by ``input_scale * filter_scale[c]`` in float32 and
the bias, fused activation and fused epilogue steps follow as in the float kernels.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.epilogue import Epilogue
from gpulite.backends.cpu.kernels.conv import ConvGemm, group_gemms
from gpulite.backends.cpu.kernels.depthwise import depthwise_plan, plan_runner
from gpulite.backends.cpu.quant import quantize_rows
from gpulite.errors import UnsupportedOpError

F32 = np.float32


def quantize_xnnpack(x: np.ndarray, centered: np.ndarray, inv_scale: np.ndarray, tmp: np.ndarray) -> None:
    """XNNPACK's dynamic int8 quantization of each row of ``x`` (rows, k), float32.

    Writes ``q - zero_point`` of every value into ``centered`` (float64, same shape) and each
    row's dequantization scale into ``inv_scale`` (rows,). ``tmp`` is float32 scratch shaped
    like ``x``. Rounds half to even (``lrintf``), in float32 throughout, as XNNPACK does.
    """
    lo = np.minimum(x.min(axis=1), F32(0))
    hi = np.maximum(x.max(axis=1), F32(0))
    same = lo == hi
    scale = np.where(same, F32(1), F32(255) / np.where(same, F32(1), hi - lo)).astype(F32)
    lo_s, hi_s = lo * scale, hi * scale
    zp = np.where((F32(-128) + lo_s) + (F32(127) + hi_s) > 0, F32(-128) - lo_s, F32(127) - hi_s)
    zp = np.rint(np.clip(zp, F32(-128), F32(127)))
    np.multiply(x, scale[:, None], out=tmp)
    np.clip(tmp, (F32(-128) - zp)[:, None], (F32(127) - zp)[:, None], out=tmp)
    np.rint(tmp, out=tmp)
    np.copyto(centered, tmp)
    np.divide(F32(1), scale, out=inv_scale)


def quantize_tflite(x: np.ndarray, centered: np.ndarray, scale_out: np.ndarray, tmp: np.ndarray) -> None:
    """TFLite's ``AsymmetricQuantizeFloats`` of each row of ``x`` (rows, k), float32
    (:func:`~gpulite.backends.cpu.quant.quantize_rows`, which the hybrid LSTM uses too).

    Same outputs as :func:`quantize_xnnpack`: ``q - offset`` into ``centered`` and each row's
    scaling factor into ``scale_out`` (``tmp``, the scratch that one needs, is not used).
    """
    q, scale, zero_point = quantize_rows(x, asymmetric=True)
    np.subtract(q, zero_point[:, None], out=centered, dtype=np.float64)
    np.copyto(scale_out, scale)


def filter_scales(node, ctx, channels: int, axis: int, per_tensor_ok: bool = True) -> np.ndarray:
    """The int8 constant filter's scales as a float32 vector of ``channels`` (a per-tensor
    scale repeated); ``UnsupportedOpError`` for anything LiteRT's hybrid kernels refuse."""
    info = ctx.in_info(1)
    q = info.quant
    why = None
    if ctx.const(1) is None:
        why = "a constant filter"
    elif info.dtype != np.int8 or q is None:
        why = f"an int8 quantized filter, got {info.dtype}{'' if q else ' without quantization'}"
    elif q.scale.size not in ((1, channels) if per_tensor_ok else (channels,)) or (q.scale.size > 1 and q.axis != axis):
        want = f"{channels} scales on axis {axis}" if not per_tensor_ok else f"1 or {channels} scales on axis {axis}"
        why = f"{want}, got {q.scale.size} on axis {q.axis}"
    elif np.any(q.zero_point != 0):
        why = f"filter zero points 0, got {sorted(set(q.zero_point.tolist()))[:4]}"
    if why is not None:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"hybrid (float input, int8 filter) path needs {why}")
    return np.broadcast_to(q.scale.astype(F32), (channels,)).copy()


def float_bias(node, ctx, channels: int) -> np.ndarray | None:
    """The constant float32 bias (input 2) as a vector of ``channels``, or None when omitted."""
    if not ctx.has_input(2):
        return None
    b = ctx.const(2)
    if b is None or b.dtype != np.float32:
        raise UnsupportedOpError(node.op, node.index, "cpu", "hybrid path needs a constant float32 bias")
    return np.asarray(b, F32).reshape(channels)


class ImageQuantizer:
    """Quantize a float32 NHWC input per image (or per pixel) into a float64 buffer of
    ``q - zero_point``, keeping each image's (pixel's) scale: the input the integer convs read."""

    def __init__(self, x: np.ndarray, tflite: bool, per_pixel: bool = False) -> None:
        self.x2 = x.reshape(-1, x.shape[-1]) if per_pixel else x.reshape(x.shape[0], -1)
        self.centered = np.empty(x.shape, np.float64)
        self.c2 = self.centered.reshape(self.x2.shape)
        self.scale = np.empty(self.x2.shape[0], F32)
        self.tmp = np.empty(self.x2.shape, F32)
        self.fn = quantize_tflite if tflite else quantize_xnnpack

    def __call__(self) -> None:
        self.fn(self.x2, self.c2, self.scale, self.tmp)


def conv_output(node, ctx, acc: np.ndarray, out: np.ndarray, image_scale: np.ndarray, ch_scale: np.ndarray,
                bias: np.ndarray | None):
    """The closure writing ``float(acc) * image_scale[n] * ch_scale[c]`` into the NHWC ``out``
    (``image_scale`` has one scale per image or, for a pointwise conv, per pixel),
    then bias, fused activation and fused epilogue steps (:class:`Epilogue`)."""
    out_n = out.reshape(image_scale.shape[0], -1)
    out_c = out.reshape(-1, out.shape[-1])
    post = Epilogue(node, ctx, out, bias=bias).chunk(0, out_c.shape[0])

    def run() -> None:
        np.copyto(out, acc, casting="same_kind")
        np.multiply(out_n, image_scale[:, None], out=out_n)
        np.multiply(out_c, ch_scale, out=out_c)
        if post is not None:
            post()
    return run


def hybrid_conv_2d(node, ctx, win, groups: int = 1):
    """CONV_2D with float input and an int8 filter (XNNPACK's dynamically quantized conv); a
    grouped one (``groups`` > 1) multiplies each group's channels by its filters, the whole
    image quantized once."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    o = w.shape[0]
    ws = filter_scales(node, ctx, o, 0)
    bias = float_bias(node, ctx, o)
    # XNNPACK runs an ungrouped pointwise conv as a fully connected op: one quantization per pixel
    pointwise = win.kh == win.kw == win.sh == win.sw == 1 and not win.padded and groups == 1
    quant = ImageQuantizer(x, tflite=False, per_pixel=pointwise)
    acc = np.empty(out.shape, np.float64)
    if groups != 1:
        multiplies = group_gemms(win, groups, quant.centered, acc, np.asarray(w, np.float64), 0.0, np.float64)
    else:
        gemm = ConvGemm(win, quant.centered, acc, 0.0, np.float64)
        multiplies = [gemm.bind(np.ascontiguousarray(np.asarray(w, np.float64).reshape(o, -1).T))]
    finish = conv_output(node, ctx, acc, out, quant.scale, ws, bias)

    def run() -> None:
        quant()
        for multiply in multiplies:
            multiply()
        finish()
    return run


def hybrid_depthwise_conv_2d(node, ctx, win, mult: int):
    """DEPTHWISE_CONV_2D with float input and an int8 per-channel filter (TFLite's builtin
    ``EvalHybridPerChannel``; LiteRT refuses per-tensor filter scales here)."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    co = w.shape[3]
    ws = filter_scales(node, ctx, co, 3, per_tensor_ok=False)
    bias = float_bias(node, ctx, co)
    quant = ImageQuantizer(x, tflite=True)
    acc = np.empty(out.shape, np.float64)
    phased, plans, fn = depthwise_plan(win, quant.centered, acc, mult, np.asarray(w, np.float64)[0], None, 0.0,
                                       np.float64)
    taps = plan_runner(phased, plans, fn)
    finish = conv_output(node, ctx, acc, out, quant.scale, ws, bias)

    def run() -> None:
        quant()
        taps()
        finish()
    return run


def hybrid_fully_connected(node, ctx, rows: int, depth: int, units: int):
    """FULLY_CONNECTED with float input and int8 weights: XNNPACK's per-row quantization,
    whatever ``asymmetric_quantize_inputs`` says (LiteRT's default path)."""
    x, w, out = ctx.input(0), ctx.input(1), ctx.output(0)
    ws = filter_scales(node, ctx, units, 0)
    bias = float_bias(node, ctx, units)
    x2, out2 = x.reshape(rows, depth), out.reshape(rows, units)
    centered = np.empty((rows, depth), np.float64)
    tmp = np.empty((rows, depth), F32)
    row_scale = np.empty(rows, F32)
    acc = np.empty((rows, units), np.float64)
    wt = np.ascontiguousarray(np.asarray(w, np.float64).T)
    act = clamp_fn(node.activation)

    def run() -> None:
        quantize_xnnpack(x2, centered, row_scale, tmp)
        np.matmul(centered, wt, out=acc)
        np.copyto(out2, acc, casting="same_kind")
        np.multiply(out2, row_scale[:, None], out=out2)
        np.multiply(out2, ws, out=out2)
        if bias is not None:
            np.add(out2, bias, out=out2)
        if act:
            act(out2)
    return run


def hybrid_batch_matmul(node, ctx, av: np.ndarray, bv: np.ndarray):
    """BATCH_MATMUL of a float LHS by a constant int8 RHS: each LHS row quantized as
    XNNPACK does; per-channel scales run along the output's columns."""
    out = ctx.output(0)
    n = bv.shape[-1]
    # the scales run along the RHS's columns: its last axis as stored, or the one before with adj_y
    ws = filter_scales(node, ctx, n, bv.ndim - (2 if getattr(node.options, "adj_y", False) else 1))
    depth = av.shape[-1]
    rows = int(np.prod(av.shape[:-1]))
    lhs = np.empty(av.shape, F32)
    l2 = lhs.reshape(rows, depth)
    centered = np.empty(av.shape, np.float64)
    c2 = centered.reshape(rows, depth)
    tmp = np.empty((rows, depth), F32)
    row_scale = np.empty((*av.shape[:-1], 1), F32)  # broadcasts along the output's columns and batches
    rs2 = row_scale.reshape(rows)
    acc = np.empty(out.shape, np.float64)
    rhs = np.ascontiguousarray(np.asarray(bv, np.float64))

    def run() -> None:
        np.copyto(lhs, av)
        quantize_xnnpack(l2, c2, rs2, tmp)
        np.matmul(centered, rhs, out=acc)
        np.copyto(out, acc, casting="same_kind")
        np.multiply(out, row_scale, out=out)
        np.multiply(out, ws, out=out)
    return run
