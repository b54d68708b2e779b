"""CONCATENATION: each input copied into its precomputed slab of the output.

Quantized inputs whose scale/zero point equal the output's are copied as codes; the others
are requantized with TFLite's ``ConcatenationWithScaling`` arithmetic (float32
``q * s + b`` with ``s = in_scale * (1 / out_scale)``, ``b = -in_zp * s``, rounded half away
from zero, plus the output zero point, clamped). LiteRT itself requantizes only uint8 and
refuses int8 inputs with differing parameters; the same formula serves both here.

A fused activation declared in the model's options is ignored, as LiteRT's default path runs
it: TFLite's own kernel refuses it in Prepare, but the XNNPACK delegate takes the node and
silently drops the activation (measured with LiteRT 2.3 for float32, int8 and uint8), so a
model carrying one runs in LiteRT with default options and its outputs are the plain
concatenation. An activation that gpulite's fusion pass (:mod:`gpulite.graph.fusion`) moved
here from a following RELU node (only onto a node that declares none) is applied.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.activation import clamp_fn
from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op


def _qparams(info) -> tuple[float, int] | None:
    q = info.quant
    if q is None or q.scale.size == 0:
        return None
    if q.scale.size > 1:
        return (float("nan"), 0)  # per-channel: never equal, rejected below
    return float(q.scale[0]), int(q.zero_point[0])


def _requantizer(src: np.ndarray, dst: np.ndarray, s_in: tuple[float, int], s_out: tuple[float, int]):
    """A closure writing ``src`` requantized from ``s_in`` to ``s_out`` into ``dst``."""
    scale = np.float32(s_in[0]) * (np.float32(1.0) / np.float32(s_out[0]))
    bias = np.float32(-s_in[1]) * scale
    info = np.iinfo(dst.dtype)
    lo, hi = info.min - s_out[1], info.max - s_out[1]  # clamp before adding the zero point
    f32 = np.empty(src.shape, np.float32)
    f64 = np.empty(src.shape, np.float64)
    sign = np.empty(src.shape, np.float64)

    def run() -> None:
        np.multiply(src, scale, out=f32)      # float32, as TFLite computes it
        np.add(f32, bias, out=f32)
        np.copyto(f64, f32)                   # round half away from zero, exactly, in float64
        np.sign(f64, out=sign)
        np.abs(f64, out=f64)
        np.add(f64, 0.5, out=f64)
        np.floor(f64, out=f64)
        np.multiply(f64, sign, out=f64)
        np.clip(f64, lo, hi, out=f64)
        np.add(f64, s_out[1], out=f64)
        np.copyto(dst, f64, casting="unsafe")
    return run


@register_kernel(Op.CONCATENATION, "cpu")
def concatenation(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Concatenate the inputs along ``axis`` (negative allowed) into the output."""
    out = ctx.output(0)
    axis = layout.normalize_axis(getattr(node.options, "axis", 0), out.ndim, node)
    declared = getattr(node.options, "fused_activation_function", 0) != 0
    quantized = out.dtype in (np.int8, np.uint8) and _qparams(ctx.out_info(0)) is not None
    act = None if declared else clamp_fn(node.activation)  # else only ever set by the float fusion pass
    q_out = _qparams(ctx.out_info(0)) if quantized else None
    if q_out is not None and np.isnan(q_out[0]):
        raise UnsupportedOpError(node.op, node.index, "cpu", "per-channel quantized output")
    steps, start = [], 0
    for i in range(ctx.num_inputs):
        src = ctx.input(i)
        n = src.shape[axis] if src.ndim == out.ndim else -1
        ok = src.ndim == out.ndim and all(a == b for d, (a, b) in enumerate(zip(src.shape, out.shape, strict=True))
                                          if d != axis)
        if not ok or src.dtype != out.dtype or start + n > out.shape[axis]:
            raise ShapeError(f"{layout.where(node)}input {i} {list(src.shape)} {src.dtype} does not fit output "
                             f"{list(out.shape)} {out.dtype} along axis {axis} at offset {start}")
        dst = out[(slice(None),) * axis + (slice(start, start + n),)]
        start += n
        q_in = _qparams(ctx.in_info(i)) if quantized else None
        if q_in is not None and q_in != q_out:
            if np.isnan(q_in[0]):
                raise UnsupportedOpError(node.op, node.index, "cpu", f"per-channel quantized input {i}")
            steps.append(_requantizer(src, dst, q_in, q_out))
        else:
            steps.append(lambda dst=dst, src=src: np.copyto(dst, src))
    if start != out.shape[axis]:
        raise ShapeError(f"{layout.where(node)}inputs fill {start} of {out.shape[axis]} along axis {axis}")

    def run() -> None:
        for step in steps:
            step()
        if act:
            act(out)
    return run
