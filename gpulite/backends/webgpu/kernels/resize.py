"""RESIZE_BILINEAR (float32, NHWC, in the cpu kernel's float32 steps, XNNPACK's or, for a size computed
at run time, LiteRT's builtin kernel's; int8/uint8/int16 codes under
``quantized="exact"``, as the cpu kernel's fixed point) and RESIZE_NEAREST_NEIGHBOR (any dtype, NHWC)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.resize import (
    bilinear_source,
    builtin_weights,
    nearest_axis,
    q10_axis,
    q11_axis,
    uint8_888,
    xnnpack_size,
)
from gpulite.backends.kernels import declare_int8, register_case, register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.integer import exact_codes, require_codes, words_program
from gpulite.backends.webgpu.kernels.movement import move_program
from gpulite.backends.webgpu.kernels.qmath import load_fn
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op


def _bilinear_options(node: Node, ctx: GpuContext, x, out) -> sg.ResizeBilinearOptions:
    """The node's options, once its NHWC shapes (same N and C) and option mix are checked."""
    if len(x.shape) != 4 or len(out.shape) != 4 or x.shape[::3] != out.shape[::3]:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape} (expected NHWC, same N and C)")
    o = node.options or sg.ResizeBilinearOptions()
    if o.align_corners and o.half_pixel_centers:
        raise ctx.unsupported("align_corners together with half_pixel_centers")
    return o


@register_kernel(Op.RESIZE_BILINEAR, "webgpu")
def resize_bilinear(node: Node, ctx: GpuContext) -> Program:
    """float32: the cpu kernel's (XNNPACK's) float32 steps, bit for bit; each axis's scale and
    half-pixel offset come from the cpu kernel's :func:`bilinear_source`. A size computed at run
    time: LiteRT's optimized builtin kernel, as the cpu kernel (:func:`_builtin`)."""
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_f32(x, out)
    o = _bilinear_options(node, ctx, x, out)
    _, ih, iw, c = x.shape
    _, oh, ow, _ = out.shape
    if not xnnpack_size(ctx):
        return _builtin(ctx, x, out, o)
    (scale_h, off_h), (scale_w, off_w) = (bilinear_source(n_in, n_out, o.align_corners, o.half_pixel_centers)
                                          for n_in, n_out in ((ih, oh), (iw, ow)))
    params = [
        ("in_h", "u32", ih), ("in_w", "u32", iw), ("c", "u32", c), ("out_h", "u32", oh), ("out_w", "u32", ow),
        ("scale_h", "f32", float(scale_h)), ("scale_w", "f32", float(scale_w)),
        ("off_h", "f32", float(off_h)), ("off_w", "f32", float(off_w)),
        ("x_off", "u32", x.offset), ("out_off", "u32", out.offset), ("zero", "u32", 0),
    ]
    return make_program(f"resize_bilinear {x.shape}->{out.shape}", "resize_bilinear", params, out.size)


def _builtin(ctx: GpuContext, x, out, o: sg.ResizeBilinearOptions) -> Program:
    """``resize_bilinear_builtin.wgsl``: the exact-2x case, or per-axis tables of the cpu kernel's
    :func:`builtin_weights` (indices and float32 weights' bits)."""
    _, ih, iw, c = x.shape
    _, oh, ow, _ = out.shape
    two_x = not o.align_corners and not o.half_pixel_centers and (oh, ow) == (2 * ih, 2 * iw)

    def table(n_in: int, n_out: int) -> int:
        lo, hi, w0, w1 = builtin_weights(n_in, n_out, o.align_corners, o.half_pixel_centers)
        rows = np.stack([lo.astype(np.uint32), hi.astype(np.uint32), w0.view(np.uint32), w1.view(np.uint32)], 1)
        return ctx.upload(rows.astype(np.uint32)).offset
    params = [("in_h", "u32", ih), ("in_w", "u32", iw), ("c", "u32", c), ("out_h", "u32", oh), ("out_w", "u32", ow),
              ("two_x", "u32", int(two_x)), ("ytab_off", "u32", table(ih, oh)), ("xtab_off", "u32", table(iw, ow)),
              ("x_off", "u32", x.offset), ("out_off", "u32", out.offset), ("zero", "u32", 0)]
    return make_program(f"resize_bilinear (builtin) {x.shape}->{out.shape}", "resize_bilinear_builtin", params,
                        out.size)


@register_case(Op.RESIZE_BILINEAR, "webgpu", exact_codes)
def resize_bilinear_codes(node: Node, ctx: GpuContext) -> Program:
    """8-bit: XNNPACK's Q11 blend (LiteRT's default path); int16: TFLite's Q10 integer kernel. With
    a size computed at run time (XNNPACK declines it) as the cpu kernel: int8 in Q10 too, uint8 as
    ``ResizeBilinearGenericSmallChannel``'s float32 sum (but for :func:`uint8_888`'s case). The
    per-row and per-column tables come from the cpu kernel's own functions."""
    x, out = ctx.input(0), ctx.output(0)
    require_codes(ctx, x, out)
    if x.dtype != out.dtype:
        raise ctx.unsupported(f"{x.dtype} -> {out.dtype} (expected one dtype)")
    o = _bilinear_options(node, ctx, x, out)
    _, ih, iw, c = x.shape
    _, oh, ow, _ = out.shape
    builtin = not xnnpack_size(ctx)
    blend = ("blend_q10" if x.dtype == np.int16 or (builtin and x.dtype == np.int8) else
             "blend_small" if builtin and not uint8_888(x.shape, out.shape, o.align_corners, o.half_pixel_centers)
             else "blend_q11")

    def table(n_in: int, n_out: int) -> int:
        if blend == "blend_q10":
            w, lo, hi = q10_axis(n_in, n_out, o.align_corners, o.half_pixel_centers)
        elif blend == "blend_small":  # the upper index's float32 weight d, as bits (the lower's is 1 - d)
            lo, hi, _, d = builtin_weights(n_in, n_out, o.align_corners, o.half_pixel_centers)
            w = d.view(np.int32)
        else:
            lo, hi, w = q11_axis(n_in, n_out, o.align_corners, o.half_pixel_centers)
        return ctx.upload(np.stack([lo, hi, w], axis=1).astype(np.int32)).offset
    params = [("in_h", "u32", ih), ("in_w", "u32", iw), ("c", "u32", c), ("out_h", "u32", oh), ("out_w", "u32", ow),
              ("ytab_off", "u32", table(ih, oh)), ("xtab_off", "u32", table(iw, ow)), ("x_off", "u32", x.offset),
              ("zero", "u32", 0)]
    return words_program(f"resize_bilinear {x.dtype} {x.shape}->{out.shape}", "qresize_bilinear", out, params,
                         LOAD=load_fn(x.dtype), BLEND=blend)


declare_int8("webgpu", Op.RESIZE_BILINEAR)


@register_kernel(Op.RESIZE_NEAREST_NEIGHBOR, "webgpu")
def resize_nearest(node: Node, ctx: GpuContext) -> Program:
    x, out = ctx.input(0), ctx.output(0)
    ctx.require_same_quant()
    if len(x.shape) != 4 or len(out.shape) != 4 or x.shape[::3] != out.shape[::3]:
        raise ctx.unsupported(f"shapes {x.shape} -> {out.shape} (expected NHWC, same N and C)")
    o = node.options or sg.ResizeNearestNeighborOptions()
    _, ih, iw, c = x.shape
    _, oh, ow, _ = out.shape
    # Source rows/columns from the CPU kernel's function: TFLite's float32 rounding, and the
    # 16.16 fixed point LiteRT's optimized 8-bit kernel uses; the shader only gathers.
    eight_bit = x.dtype.itemsize == 1
    iy = nearest_axis(ih, oh, o.align_corners, o.half_pixel_centers, eight_bit).astype(np.uint32)
    ix = nearest_axis(iw, ow, o.align_corners, o.half_pixel_centers, eight_bit).astype(np.uint32)
    params = [("in_h", "u32", ih), ("in_w", "u32", iw), ("c", "u32", c), ("out_h", "u32", oh), ("out_w", "u32", ow),
              ("iy_off", "u32", ctx.upload(iy).offset), ("ix_off", "u32", ctx.upload(ix).offset)]
    return move_program(ctx, f"resize_nearest_neighbor {x.shape}->{out.shape}", "resize_nearest", x, out, params)
