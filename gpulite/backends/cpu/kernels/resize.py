"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (NHWC), with LiteRT's coordinate rules.

Nearest-neighbour source indices are computed once per output row/column in float32, exactly
as TFLite's reference ``GetNearestNeighbor`` does; 8-bit nearest-neighbour without
align_corners/half_pixel_centers uses the 16.16 fixed-point scale of TFLite's optimized uint8
kernel, which is what LiteRT runs. Bilinear follows LiteRT's default path, XNNPACK: its
per-row and per-column source indices and weights (float32, the coordinate clamped to the
input), a horizontal blend of the two source rows, then a vertical one, into buffers made in
the factory; float32 in XNNPACK's float32 steps (bit-equal to it), 8-bit in its Q11 fixed point
on the codes; int16 in TFLite's Q10 ``ResizeBilinearInteger`` (XNNPACK takes no int16). A
float32 or 8-bit one whose size is computed at run time, which XNNPACK declines, follows LiteRT's
optimized builtin kernel instead (:func:`xnnpack_size`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu import jit
from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

F32 = np.float32
PROGRAM_MIN = 1 << 15  # output elements per thread from which the compiled upsampling splits


def resize_scale(n_in: int, n_out: int, align_corners: bool) -> np.float32:
    """The float32 ratio of input to output size (of their last indices with align_corners), as
    TFLite and XNNPACK compute it."""
    if align_corners and n_out > 1:
        return F32(n_in - 1) / F32(n_out - 1)
    return F32(n_in) / F32(n_out)


def bilinear_source(n_in: int, n_out: int, align_corners: bool, half_pixel: bool) -> tuple[np.float32, np.float32]:
    """XNNPACK's float32 ``(scale, offset)`` for one axis: output ``i`` reads the source coordinate
    ``i * scale + offset``, each step rounded, clamped to ``[0, n_in - 1]``; the offset is
    ``0.5 * scale - 0.5`` for half-pixel centres, else 0 (adding it changes nothing)."""
    scale = resize_scale(n_in, n_out, align_corners)
    return scale, (F32(0.5) * scale - F32(0.5) if half_pixel and not align_corners else F32(0))


def bilinear_axis(n_in: int, n_out: int, align_corners: bool, half_pixel: bool):
    """XNNPACK's ``xnn_indirection_init_resize_bilinear2d_hwc_f32`` for one axis (LiteRT's default
    path), in float32 step by step: per output index the lower and upper source index and the
    upper one's weight. The lower index truncates the clamped source coordinate
    (:func:`bilinear_source`), the upper is the next one (clamped), the weight is the distance
    to the lower."""
    scale, offset = bilinear_source(n_in, n_out, align_corners, half_pixel)
    src = np.clip(np.arange(n_out, dtype=F32) * scale + offset, F32(0), F32(n_in - 1))
    lo = src.astype(np.int32)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo.astype(np.intp), hi.astype(np.intp), (src - lo.astype(F32)).astype(F32)


def q11_axis(n_in: int, n_out: int, align_corners: bool, half_pixel: bool):
    """XNNPACK's ``xnn_indirection_init_resize_bilinear2d_hwc_q11`` for one axis: the indices of
    :func:`bilinear_axis` and the upper one's weight in Q11 (``lrintf(alpha * 2048)``)."""
    lo, hi, alpha = bilinear_axis(n_in, n_out, align_corners, half_pixel)
    return lo, hi, np.rint(alpha * F32(2048)).astype(np.int32)


def _bilinear_q11(src: np.ndarray, out: np.ndarray, align: bool, half: bool) -> Callable[[], None]:
    """8-bit bilinear resize as LiteRT's default path (XNNPACK's ``s8/u8-ibilinear``) computes it,
    on the codes (no rescale): ``t = (tl << 11) + (tr - tl) * ax``, likewise ``b``, then
    ``((t << 11) + (b - t) * ay + 2**21) >> 22``, exactly in int32."""
    n, h, w, c = src.shape
    _, oh, ow, _ = out.shape
    y0, y1, ay = q11_axis(h, oh, align, half)
    x0, x1, ax = q11_axis(w, ow, align, half)
    ax, ay = ax.reshape(1, 1, ow, 1), ay.reshape(1, oh, 1, 1)
    wide = np.empty(src.shape, np.int32)
    top, bottom = np.empty((n, oh, w, c), np.int32), np.empty((n, oh, w, c), np.int32)
    t, b, tmp = (np.empty(out.shape, np.int32) for _ in range(3))

    def blend_columns(rows: np.ndarray, dst: np.ndarray) -> None:  # (l << 11) + (r - l) * ax
        np.take(rows, x0, axis=2, out=dst, mode="clip")
        np.take(rows, x1, axis=2, out=tmp, mode="clip")
        np.subtract(tmp, dst, out=tmp)
        np.multiply(tmp, ax, out=tmp)
        np.left_shift(dst, 11, out=dst)
        np.add(dst, tmp, out=dst)

    def run() -> None:
        np.copyto(wide, src)
        np.take(wide, y0, axis=1, out=top, mode="clip")
        np.take(wide, y1, axis=1, out=bottom, mode="clip")
        blend_columns(top, t)
        blend_columns(bottom, b)
        np.subtract(b, t, out=b)
        np.multiply(b, ay, out=b)
        np.left_shift(t, 11, out=t)
        np.add(t, b, out=t)
        np.add(t, 1 << 21, out=t)
        np.right_shift(t, 22, out=t)
        np.copyto(out, t, casting="unsafe")
    return run


def q10_axis(n_in: int, n_out: int, align_corners: bool, half_pixel: bool):
    """TFLite's ``ComputeInterpolationValuesInteger`` for one axis: per output index the Q10 source
    coordinate (scale rounded to Q10) and the two source indices (C division, clamped)."""
    if align_corners and n_out > 1:
        scale = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    else:
        scale = ((1 << 10) * n_in + n_out // 2) // n_out
    src = np.arange(n_out, dtype=np.int64) * scale + ((scale // 2 - (1 << 9)) if half_pixel else 0)
    lo = np.maximum(np.fix(src / 1024).astype(np.int64), 0)
    hi = np.minimum(np.fix((src + 1023) / 1024).astype(np.int64), n_in - 1)
    return src - 1024 * lo, lo.astype(np.intp), hi.astype(np.intp)


def _bilinear_int16(src: np.ndarray, out: np.ndarray, align: bool, half: bool) -> Callable[[], None]:
    """int16 bilinear resize (16x8 mode) as TFLite's ``ResizeBilinearInteger`` (LiteRT's only int16
    path, and its optimized int8 kernel's): Q10 weights, the four products summed in Q20, rounded
    half away from zero."""
    _, oh, ow, _ = out.shape
    wy, y0, y1 = q10_axis(src.shape[1], oh, align, half)
    wx, x0, x1 = q10_axis(src.shape[2], ow, align, half)
    wy, wx = wy.reshape(1, oh, 1, 1), wx.reshape(1, 1, ow, 1)

    def run() -> None:
        v = src.astype(np.int64)
        top, bottom = v[:, y0], v[:, y1]
        acc = ((top[:, :, x0] * (1024 - wx) + top[:, :, x1] * wx) * (1024 - wy)
               + (bottom[:, :, x0] * (1024 - wx) + bottom[:, :, x1] * wx) * wy)
        acc += np.where(acc > 0, 1 << 19, -(1 << 19))
        np.copyto(out, np.fix(acc / (1 << 20)), casting="unsafe")
    return run


def nearest_axis(n_in: int, n_out: int, align_corners: bool, half_pixel: bool, eight_bit: bool) -> np.ndarray:
    """Per output index: the source index TFLite picks."""
    i = np.arange(n_out)
    if eight_bit and not align_corners and not half_pixel:
        fixed = (n_in << 16) // n_out + 1  # optimized_ops::ResizeNearestNeighbor
        return np.minimum((i * fixed) >> 16, n_in - 1).astype(np.intp)
    v = (i.astype(F32) + F32(0.5 if half_pixel else 0.0)) * resize_scale(n_in, n_out, align_corners)
    # TfLiteRound is std::round: half away from zero (v >= 0 here).
    idx = np.floor(v.astype(np.float64) + 0.5) if align_corners else np.floor(v)
    # TFLite also clamps at 0 for half_pixel_centers, but (i + 0.5) * scale is never negative.
    return np.minimum(idx.astype(np.int64), n_in - 1).astype(np.intp)


def _setup(node: Node, ctx: CpuContext):
    src, out = ctx.input(0), ctx.output(0)
    if src.ndim != 4 or out.ndim != 4 or out.shape[0] != src.shape[0] or out.shape[3] != src.shape[3]:
        raise ShapeError(f"{layout.where(node)}expected NHWC input and output with equal N and C; got "
                         f"{list(src.shape)} -> {list(out.shape)}")
    size = ctx.const(1)
    if size is not None and layout.ints(size) != list(out.shape[1:3]):
        raise ShapeError(f"{layout.where(node)}size {layout.ints(size)} differs from the output {list(out.shape)}")
    if out.dtype != src.dtype:
        raise ShapeError(f"{layout.where(node)}input dtype {src.dtype} differs from output dtype {out.dtype}")
    o = node.options
    return src, out, bool(getattr(o, "align_corners", False)), bool(getattr(o, "half_pixel_centers", False))


@register_kernel(Op.RESIZE_BILINEAR, "cpu")
def resize_bilinear(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Bilinear resize of a float32, int8, uint8 or int16 NHWC tensor to the output's height and width."""
    src, out, align, half = _setup(node, ctx)
    if src.dtype not in (np.float32, np.int8, np.uint8, np.int16):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{src.dtype} input; float32, int8, uint8 and "
                                 "int16 are supported")
    if align and half:  # TFLite's Prepare refuses this pair for bilinear (not for nearest)
        raise UnsupportedOpError(node.op, node.index, "cpu", "half_pixel_centers needs align_corners=False")
    if src.dtype == np.int16 or (src.dtype == np.int8 and not xnnpack_size(ctx)):
        return _bilinear_int16(src, out, align, half)
    if src.dtype == np.uint8 and not xnnpack_size(ctx) and not uint8_888(src.shape, out.shape, align, half):
        return _bilinear_small_channel(src, out, align, half)
    if src.dtype != np.float32:
        return _bilinear_q11(src, out, align, half)
    if not xnnpack_size(ctx):
        return _bilinear_builtin(src, out, align, half)
    (_, h, w, _), (_, oh, ow, _) = src.shape, out.shape
    if (oh, ow) == (2 * h, 2 * w) and half and not align and h > 1 and w > 1:
        return _upsample2x(src, out, ctx)
    return _bilinear_f32(src, out, align, half)


def xnnpack_size(ctx) -> bool:
    """Whether default LiteRT runs this float32 / 8-bit RESIZE_BILINEAR in XNNPACK: its delegate
    takes a size constant in the file only; one computed at run time (gpulite folds ``SHAPE``-built
    ones at load, ``TensorInfo.folded``) runs LiteRT's optimized builtin kernel: float32
    :func:`_bilinear_builtin`; int8 the reference ``ResizeBilinearInteger`` (Q10, as int16); uint8
    ``ResizeBilinearGenericSmallChannel`` (:func:`_bilinear_small_channel`), but for the 8x
    half-pixel case of :func:`uint8_888`. Measured with ai-edge-litert 2.3 (tests/ops/test_resize.py)."""
    size = ctx.in_info(1)
    return size.is_const and not size.folded


def uint8_888(in_shape: tuple[int, ...], out_shape: tuple[int, ...], align: bool, half: bool) -> bool:
    """LiteRT's optimized uint8 kernel's ``ResizeBilinear888Uint8`` case (half-pixel centres, exact
    8x, channels in eights): its 8.8 fixed point holds every intermediate exactly and rounds halves
    up once, which is what XNNPACK's Q11 blend gives (:func:`_bilinear_q11`; measured equal)."""
    (_, h, w, c), (_, oh, ow, _) = in_shape, out_shape
    return half and not align and c % 8 == 0 and oh >= 8 and ow >= 8 and (oh, ow) == (8 * h, 8 * w)


def _bilinear_small_channel(src: np.ndarray, out: np.ndarray, align: bool, half: bool) -> Callable[[], None]:
    """uint8 as TFLite's ``ResizeBilinearGenericSmallChannel``: the codes in float32 times the four
    corners' float32 weights (:func:`_bilinear_builtin`'s), summed left to right, plus 0.5,
    truncated."""
    n, h, w, c = src.shape
    _, oh, ow, _ = out.shape
    corners = _builtin_corners(h, w, oh, ow, align, half)
    flat = np.empty((n, h * w, c), F32)
    acc, tmp = np.empty((n, oh * ow, c), F32), np.empty((n, oh * ow, c), F32)

    def run() -> None:
        np.copyto(flat, src.reshape(flat.shape))
        for k, (pixels, scale) in enumerate(corners):
            np.take(flat, pixels, axis=1, out=tmp, mode="clip")
            np.multiply(tmp, scale, out=acc if k == 0 else tmp)
            if k:
                np.add(acc, tmp, out=acc)
        np.add(acc, F32(0.5), out=acc)
        np.copyto(out, acc.reshape(out.shape), casting="unsafe")
    return run


def _builtin_corners(h: int, w: int, oh: int, ow: int, align: bool, half: bool) -> list:
    """Per corner (y0, x0), (y0, x1), (y1, x0), (y1, x1): the source pixel of each output pixel
    (within an image) and the float32 product of the row's and column's weight (:func:`builtin_weights`)."""
    y0, y1, wy0, wy1 = builtin_weights(h, oh, align, half)
    x0, x1, wx0, wx1 = builtin_weights(w, ow, align, half)
    return [((ya[:, None] * w + xa[None, :]).reshape(-1), np.multiply.outer(sy, sx).astype(F32).reshape(1, oh * ow, 1))
            for ya, sy in ((y0, wy0), (y1, wy1)) for xa, sx in ((x0, wx0), (x1, wx1))]


def builtin_axis(n_in: int, n_out: int, align_corners: bool, half_pixel: bool):
    """TFLite's ``ComputeInterpolationValues`` for one axis, in float32: per output index the source
    coordinate ``i * scale`` (``(i + 0.5) * scale - 0.5`` for half-pixel centres, not clamped), its
    floor (at least 0) and ceiling (at most ``n_in - 1``), and the coordinate less the floor
    (negative near a half-pixel edge: the weights then extrapolate, as LiteRT's do)."""
    scale = resize_scale(n_in, n_out, align_corners)
    i = np.arange(n_out, dtype=F32)
    src = (i + F32(0.5)) * scale - F32(0.5) if half_pixel else i * scale
    lo = np.maximum(np.floor(src).astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), n_in - 1)
    return lo.astype(np.intp), hi.astype(np.intp), (src - lo.astype(F32)).astype(F32)


def builtin_weights(n_in: int, n_out: int, align_corners: bool, half_pixel: bool):
    """:func:`builtin_axis`'s indices and the two float32 weights ``1 - d`` and ``d`` of each output index."""
    lo, hi, d = builtin_axis(n_in, n_out, align_corners, half_pixel)
    return lo, hi, (F32(1) - d).astype(F32), d


def _bilinear_builtin(src: np.ndarray, out: np.ndarray, align: bool, half: bool) -> Callable[[], None]:
    """float32 bilinear resize as LiteRT's optimized builtin kernel (``optimized/resize_bilinear.h``):
    exact 2x without align_corners or half-pixel centres as ``ResizeBilinear2x2``
    (:func:`_builtin_2x`); otherwise ``ResizeBilinearGeneric``: from zero, ``out += in * s`` for the
    four corners in the order (y0, x0), (y0, x1), (y1, x0), (y1, x1), with ``s`` the float32
    product of the row's and the column's weight (:func:`builtin_weights`), every step rounded."""
    n, h, w, c = src.shape
    _, oh, ow, _ = out.shape
    if not align and not half and (oh, ow) == (2 * h, 2 * w):
        return _builtin_2x(src, out)
    corners = _builtin_corners(h, w, oh, ow, align, half)
    flat = src.reshape(n, h * w, c)
    acc, tmp = np.empty((n, oh * ow, c), F32), np.empty((n, oh * ow, c), F32)

    def run() -> None:
        acc.fill(0)
        for pixels, scale in corners:
            np.take(flat, pixels, axis=1, out=tmp, mode="clip")
            np.multiply(tmp, scale, out=tmp)
            np.add(acc, tmp, out=acc)
        np.copyto(out, acc.reshape(out.shape))
    return run


def _builtin_2x(src: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """``ResizeBilinear2x2``: output (2y, 2x) is input (y, x) = a; with b its right neighbour, c the
    one below and d below-right (the edge repeated), (2y, 2x+1) is ``(a + b) / 2``, (2y+1, 2x)
    ``bl = (a + c) / 2`` and (2y+1, 2x+1) ``(bl + (b + d) / 2) / 2``."""
    n, h, w, c = src.shape
    right, below, below_right = (np.empty(src.shape, F32) for _ in range(3))
    o = out.reshape(n, h, 2, w, 2, c)
    tl, tr, bl, br = o[:, :, 0, :, 0], o[:, :, 0, :, 1], o[:, :, 1, :, 0], o[:, :, 1, :, 1]
    half = F32(0.5)

    def shifted(x: np.ndarray, dst: np.ndarray, axis: int) -> None:  # x[k + 1] along axis, the last kept
        n_ax = x.shape[axis]
        take = [slice(None)] * 4
        put = [slice(None)] * 4
        take[axis], put[axis] = slice(1, n_ax), slice(0, n_ax - 1)
        dst[tuple(put)] = x[tuple(take)]
        take[axis] = put[axis] = slice(n_ax - 1, n_ax)
        dst[tuple(put)] = x[tuple(take)]

    def run() -> None:
        shifted(src, right, 2)
        shifted(src, below, 1)
        shifted(below, below_right, 2)
        np.copyto(tl, src)
        np.add(src, right, out=tr)
        np.multiply(tr, half, out=tr)
        np.add(src, below, out=bl)
        np.multiply(bl, half, out=bl)
        np.add(right, below_right, out=below_right)
        np.multiply(below_right, half, out=below_right)
        np.add(bl, below_right, out=br)
        np.multiply(br, half, out=br)
    return run


def _bilinear_f32(src: np.ndarray, out: np.ndarray, align: bool, half: bool) -> Callable[[], None]:
    """float32 bilinear resize as LiteRT's default path on x86-64 computes it (XNNPACK's
    ``f32-ibilinear`` ``sse`` kernel, no FMA; its arm64 ``neonfma`` kernel fuses the products):
    ``t = tl + (tr - tl) * ax``, likewise ``b``, then ``t + (b - t) * ay``, each step rounded to
    float32. ``t`` and ``b`` depend on the source row and the output column only, so the
    horizontal blend runs once per source row the output reads, from one gather of pixels each
    for the left and the right column."""
    n, h, w, c = src.shape
    _, oh, ow, _ = out.shape
    y0, y1, ay = bilinear_axis(h, oh, align, half)
    x0, x1, ax = bilinear_axis(w, ow, align, half)
    rows, pos = np.unique(np.concatenate([y0, y1]), return_inverse=True)  # the source rows read
    top, bottom = pos[:oh], pos[oh:]
    k = len(rows)
    left = (rows[:, None] * w + x0[None, :]).reshape(-1)  # pixel indices within an image
    right = (rows[:, None] * w + x1[None, :]).reshape(-1)
    ax = np.tile(ax, k).reshape(1, k * ow, 1)
    ay = ay.reshape(1, oh, 1, 1)
    flat = src.reshape(n, h * w, c)
    blend, diff = np.empty((n, k * ow, c), F32), np.empty((n, k * ow, c), F32)
    rows4 = blend.reshape(n, k, ow, c)
    lower = np.empty(out.shape, F32)

    def run() -> None:
        # mode="clip" keeps np.take from buffering its output; the indices are in range.
        np.take(flat, left, axis=1, out=blend, mode="clip")
        np.take(flat, right, axis=1, out=diff, mode="clip")
        np.subtract(diff, blend, out=diff)
        np.multiply(diff, ax, out=diff)
        np.add(blend, diff, out=blend)
        np.take(rows4, top, axis=1, out=out, mode="clip")
        np.take(rows4, bottom, axis=1, out=lower, mode="clip")
        np.subtract(lower, out, out=lower)
        np.multiply(lower, ay, out=lower)
        np.add(out, lower, out=out)
    return run


def _upsample2x(src: np.ndarray, out: np.ndarray, ctx: CpuContext) -> Callable[[], None]:
    """Bilinear 2x upsampling with half-pixel centers (every RESIZE_BILINEAR of the zoo), with
    :func:`_bilinear_f32`'s float32 operations without gathers.

    The source coordinate of output i is i/2 - 1/4 (exact), clamped to [0, size - 1]: output 0
    blends inputs 0 and 1 with weight 0, output 2k (k >= 1) inputs k-1 and k with weight 3/4,
    output 2k+1 inputs k and k+1 with weight 1/4, and the last output the last input with
    itself (weight 1/4). Each axis forms the differences of neighbours once and blends shifted
    slices; the columns (the horizontal blend, first as in XNNPACK) go first, on the smaller
    array. Along W the even and odd outputs are computed contiguously and then interleaved by
    one copy each of whole pixels (viewed as C*4-byte items): a ufunc writing every other pixel
    would loop C values at a time.
    """
    n, h, w, c = src.shape
    pool = ctx.scratch
    cols = pool.get(("resize", 0), (n, h, 2 * w, c), F32)
    threads = max(1, min(ctx.num_threads, out.size // PROGRAM_MIN))
    program = jit.upsample2x_program(src, cols, out, threads)  # the same operations, compiled
    if program is not None:
        return program
    d_buf, p_buf = pool.get(("resize", 1), (n, h, 2 * w, c), F32), pool.get(("resize", 3), (n, h, 2 * w, c), F32)
    even, odd = pool.get(("resize", 4), (n, h, w, c), F32), pool.get(("resize", 5), (n, h, w, c), F32)
    zero, quarter, three = F32(0), F32(0.25), F32(0.75)

    def blend(x: np.ndarray, ax: int, ev: np.ndarray, od: np.ndarray) -> list:
        """Calls writing the 2x upsampling of ``x`` along ``ax`` as even and odd halves."""
        size = x.shape[ax]

        def sl(arr, a, b):
            idx = [slice(None)] * arr.ndim
            idx[ax] = slice(a, b)
            return arr[tuple(idx)]
        shape = list(x.shape)
        shape[ax] = size - 1
        d = d_buf.reshape(-1)[:x.size // size * (size - 1)].reshape(shape)  # x[k+1] - x[k]
        p = p_buf.reshape(-1)[:d.size].reshape(shape)
        first, last = sl(x, 0, 1), sl(x, size - 1, size)
        return [
            (np.subtract, (sl(x, 1, size), sl(x, 0, size - 1)), d),
            (np.multiply, (d, three), p), (np.add, (sl(x, 0, size - 1), p), sl(ev, 1, size)),
            (np.multiply, (d, quarter), p), (np.add, (sl(x, 0, size - 1), p), sl(od, 0, size - 1)),
            (np.multiply, (sl(d, 0, 1), zero), sl(p, 0, 1)), (np.add, (first, sl(p, 0, 1)), sl(ev, 0, 1)),
            (np.subtract, (last, last), sl(d, 0, 1)), (np.multiply, (sl(d, 0, 1), quarter), sl(p, 0, 1)),
            (np.add, (last, sl(p, 0, 1)), sl(od, size - 1, size)),
        ]
    pix = np.dtype((np.void, c * 4))
    pairs = cols.view(pix).reshape(n, h, w, 2)
    calls = blend(src, 2, even, odd)
    calls += [(np.copyto, (pairs[..., 0], even.view(pix).reshape(n, h, w)), None),
              (np.copyto, (pairs[..., 1], odd.view(pix).reshape(n, h, w)), None)]
    rows = out.reshape(n, h, 2, 2 * w, c)
    calls += blend(cols, 1, rows[:, :, 0], rows[:, :, 1])

    def run() -> None:
        for fn, args, o in calls:
            if o is None:
                fn(*args)
            else:
                fn(*args, out=o)
    return run


@register_kernel(Op.RESIZE_NEAREST_NEIGHBOR, "cpu")
def resize_nearest(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Nearest-neighbour resize (any dtype: pixels are copied, codes included)."""
    src, out, align, half = _setup(node, ctx)
    n, h, w, c = src.shape
    _, oh, ow, _ = out.shape
    eight_bit = src.dtype.itemsize == 1
    iy = nearest_axis(h, oh, align, half, eight_bit)
    ix = nearest_axis(w, ow, align, half, eight_bit)
    # One gather of whole pixels: flat source pixel index for every output pixel.
    pix = (np.arange(n).reshape(n, 1, 1) * (h * w) + iy.reshape(1, oh, 1) * w + ix.reshape(1, 1, ow)).reshape(-1)
    flat_src, flat_out = src.reshape(n * h * w, c), out.reshape(n * oh * ow, c)

    def run() -> None:
        np.take(flat_src, pix, axis=0, out=flat_out, mode="clip")
    return run
