"""MediaPipe's TFLite custom ops on numpy, as ``mediapipe/util/tflite/operations/*.cc`` define them.

* ``Convolution2DTransposeBias`` (selfie segmentation): transpose convolution with OHWI
  weights plus a bias, with MediaPipe's own output size
  ``stride * (in - 1) + filter - pad`` where SAME gives
  ``pad = max(0, filter - (in - 1) % stride - 1)`` and the top/left offset is ``pad // 2``.
* ``Landmarks2TransformMatrix`` v2 (face landmarks with attention): from 3-D landmarks, a
  4x4 matrix mapping crop pixels to landmark space -- rotation from two landmarks, centre
  and size from the bounding box of a landmark subset in the rotated frame.
* ``TransformTensorBilinear`` v2: samples an NHWC tensor at ``M @ (x + .5, y + .5, 0, 1) - .5``
  of every output pixel, bilinear, 0 where the point leaves ``[0, W-1] x [0, H-1]``.
* ``TransformLandmarks`` v2: ``(x, y) -> M[:2] @ (x, y, 0, 1)``, other coordinates kept.

The last three run as compiled loops (``loops.c``: ``task_landmarks_matrix_f32``,
``task_bilinear_f32``, ``task_transform_landmarks_f32``) when the compiled loops are
available: 2, 7 and 0.5 us a call on the face model instead of numpy's 20, 75 and 6.5. The
numpy kernels here are the reference they match bit for bit; the litert backend runs a cpu
partition of such tasks as one compiled call.

MediaPipe's CPU resolver registers only version 2 of the last three, so other versions are
refused at ``allocate_tensors``. All four are float32-only, as in MediaPipe. Like MediaPipe,
the sampler and landmark transform evaluate the matrix product in float32, term by term,
so that the in/out-of-range decisions at the input's edge are the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from gpulite.backends.cpu import jit
from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.graph.shape_rules.mediapipe_ops import transpose_conv_bias_geometry
from gpulite.model.custom_options import (
    Landmarks2TransformMatrixOptions,
    TransformTensorBilinearOptions,
    TransposeConvBiasOptions,
)
from gpulite.model.opdefs import Op

_F32 = np.dtype(np.float32)
T = TypeVar("T")


def _require_float32(node: Node, ctx: CpuContext, n_in: int, n_out: int = 1) -> None:
    if ctx.num_inputs != n_in or len(node.outputs) != n_out or not all(ctx.has_input(i) for i in range(n_in)):
        raise ShapeError(f"node {node.index} ({node.op}): expected {n_in} inputs and {n_out} output(s), got "
                         f"inputs {list(node.inputs)} and outputs {list(node.outputs)}")
    for what, infos in (("input", [ctx.in_info(i) for i in range(n_in)]),
                        ("output", [ctx.out_info(i) for i in range(n_out)])):
        for i, t in enumerate(infos):
            if t.dtype != _F32:
                raise UnsupportedOpError(node.op, node.index, "cpu",
                                         f"{what} {i} is {t.dtype}; MediaPipe's kernel is float32-only")


def _require_version(node: Node, version: int) -> None:
    if node.version != version:
        raise UnsupportedOpError(
            node.op, node.index, "cpu",
            f"op version {node.version}; MediaPipe's CPU resolver registers only version {version}")


def _options(node: Node, cls: type[T]) -> T:
    """The node's custom options, decoded by the reader at load (a malformed blob never loads)."""
    if not isinstance(node.options, cls):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"expected {cls.__name__} options decoded at load, "
                                 f"got {type(node.options).__name__}")
    return node.options


# --- Convolution2DTransposeBias -------------------------------------------------------------
@register_kernel(Op.Convolution2DTransposeBias, "cpu")
def convolution_2d_transpose_bias(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Transpose conv + bias: one matmul for every (input pixel, tap), then a strided scatter-add.

    ``x (N,H,W,C) @ w^T`` gives each input pixel's contribution to each filter tap
    ``(fy, fx)``; tap ``(fy, fx)`` of input pixel ``(iy, ix)`` lands on full-size output
    pixel ``(iy*sh + fy, ix*sw + fx)``, so each tap is one strided slice added into the
    untrimmed output, which is then cropped at MediaPipe's offset and the bias added.
    """
    _require_float32(node, ctx, 3)
    opts = _options(node, TransposeConvBiasOptions)
    x, w_arr, b_arr, out = ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)
    xs, ws, bs = ctx.in_info(0).shape, ctx.in_info(1).shape, ctx.in_info(2).shape
    if len(xs) != 4 or len(ws) != 4 or len(bs) != 1:
        raise ShapeError(f"node {node.index} ({node.op}): expected input NHWC, weights OHWI and a 1-D bias, "
                         f"got shapes {list(xs)}, {list(ws)}, {list(bs)}")
    n, h, w, c = xs
    o, fh, fw, wc = ws
    if wc != c or bs[0] != o:
        raise ShapeError(f"node {node.index} ({node.op}): expected weights (O, fh, fw, {c}) and bias (O,), "
                         f"got weights {list(ws)} and bias {list(bs)}")
    oh, ph = transpose_conv_bias_geometry(h, fh, opts.stride_h, opts.padding)
    ow, pw = transpose_conv_bias_geometry(w, fw, opts.stride_w, opts.padding)
    if out.shape != (n, oh, ow, o):
        raise ShapeError(f"node {node.index} ({node.op}): expected output shape {[n, oh, ow, o]} "
                         f"(stride {opts.stride_h}x{opts.stride_w}, {opts.padding}), got {list(out.shape)}")
    sh, sw = opts.stride_h, opts.stride_w
    full_h, full_w = sh * (h - 1) + fh, sw * (w - 1) + fw
    # Weights as a (C, fh*fw*O) matrix so each matmul row is one input pixel's taps, tap-major.
    w_const = ctx.const(1)
    wmat = np.empty((c, fh * fw * o), np.float32)
    wmat_view = wmat.reshape(c, fh, fw, o)
    if w_const is not None:
        np.copyto(wmat_view, w_const.transpose(3, 1, 2, 0))
    cols = np.empty((n * h * w, fh * fw * o), np.float32)
    taps = cols.reshape(n, h, w, fh, fw, o)
    x2d = x.reshape(n * h * w, c)
    # Untrimmed output; without trimming the output array itself accumulates.
    trimmed = (full_h, full_w) != (oh, ow)
    acc = np.empty((n, full_h, full_w, o), np.float32) if trimmed else out
    crop = acc[:, ph:ph + oh, pw:pw + ow, :]
    slots = [(acc[:, fy:fy + sh * (h - 1) + 1:sh, fx:fx + sw * (w - 1) + 1:sw, :], taps[:, :, :, fy, fx, :])
             for fy in range(fh) for fx in range(fw)]

    def run() -> None:
        if w_const is None:
            np.copyto(wmat_view, w_arr.transpose(3, 1, 2, 0))
        np.matmul(x2d, wmat, out=cols)
        acc.fill(0)
        for dst, src in slots:
            np.add(dst, src, out=dst)
        np.add(crop, b_arr, out=out)

    return run


# --- Landmarks2TransformMatrix --------------------------------------------------------------
def _cos_sin(r: float) -> tuple[float, float]:
    """``(cos r, sin r)`` from the C library (as ``loops.c``); NaN for a non-finite ``r``."""
    return (math.cos(r), math.sin(r)) if math.isfinite(r) else (math.nan, math.nan)


@register_kernel(Op.Landmarks2TransformMatrix, "cpu")
def landmarks_to_transform_matrix(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``LandmarksToTransformMatrixV2``: landmarks (1, N, 3) -> matrix (1, 4, 4).

    ``rotation = target - atan2(right.y - left.y, right.x - left.x)``; the subset is rotated
    by ``rotation``, its box gives size ``(w, h)`` and centre ``c`` (rotated back); the matrix is
    ``T(c) @ R(-rotation) @ S(scale_x*w/out_w, scale_y*h/out_h) @ T(-out_w/2, -out_h/2)``.
    Landmarks are read as MediaPipe does, ``data[3*i : 3*i + 2]`` of the flat tensor. In
    double (MediaPipe: float), one operation at a time in the order of the compiled loop
    ``task_landmarks_matrix_f32`` (``loops.c``), which runs it when the compiled loops are
    available (2 us instead of 20) and matches this kernel bit for bit.
    """
    _require_version(node, 2)
    _require_float32(node, ctx, 1)
    opts = _options(node, Landmarks2TransformMatrixOptions)
    lm, out = ctx.input(0), ctx.output(0)
    shape = ctx.in_info(0).shape
    if len(shape) != 3 or shape[2] != 3:
        raise ShapeError(f"node {node.index} ({node.op}): expected landmarks (1, N, 3), got {list(shape)}")
    if out.shape != (1, 4, 4):
        raise ShapeError(f"node {node.index} ({node.op}): expected output (1, 4, 4), got {list(out.shape)}")
    count = shape[0] * shape[1]
    idx = np.asarray(opts.subset_idxs, np.int64)
    used = max(int(idx.max()), opts.left_rotation_idx, opts.right_rotation_idx)
    if used >= count:
        raise ShapeError(f"node {node.index} ({node.op}): options index landmark {used}, but the input "
                         f"{list(shape)} holds {count}")
    left, right = opts.left_rotation_idx, opts.right_rotation_idx
    half_x, half_y = opts.output_width / 2.0, opts.output_height / 2.0
    rel_x, rel_y = opts.scale_x / opts.output_width, opts.scale_y / opts.output_height
    target = float(opts.target_rotation_radians)
    task = jit.landmarks_matrix_task(lm.reshape(-1), idx, left, right, out.reshape(-1), target, (half_x, half_y),
                                     (rel_x, rel_y))
    if task is not None:
        return task
    flat = lm.reshape(-1, 3)
    xs, ys = np.empty(idx.size), np.empty(idx.size)
    px, py, t = np.empty(idx.size), np.empty(idx.size), np.empty(idx.size)
    res = out.reshape(16)

    def run() -> None:
        dx = float(flat[right, 0]) - float(flat[left, 0])
        dy = float(flat[right, 1]) - float(flat[left, 1])
        c, s = _cos_sin(target - math.atan2(dy, dx))
        xs[:] = flat[idx, 0]
        ys[:] = flat[idx, 1]
        np.multiply(xs, c, out=px)  # px = x*c - y*s, py = x*s + y*c
        np.multiply(ys, s, out=t)
        np.subtract(px, t, out=px)
        np.multiply(xs, s, out=py)
        np.multiply(ys, c, out=t)
        np.add(py, t, out=py)
        lo_x, hi_x, lo_y, hi_y = float(px.min()), float(px.max()), float(py.min()), float(py.max())
        mx, my = (lo_x + hi_x) / 2, (lo_y + hi_y) / 2
        cx, cy = c * mx + s * my, -s * mx + c * my  # R(-rotation) @ the box centre
        kx, ky = rel_x * (hi_x - lo_x), rel_y * (hi_y - lo_y)
        l00, l01, l10, l11 = c * kx, s * ky, -s * kx, c * ky  # R(-rotation) @ S(k)
        res[:] = (l00, l01, 0, cx - (l00 * half_x + l01 * half_y), l10, l11, 0, cy - (l10 * half_x + l11 * half_y),
                  0, 0, 1, 0, 0, 0, 0, 1)

    def run_quietly() -> None:  # inf - inf and 0 * inf give NaN, as in C, without numpy's warnings
        with np.errstate(invalid="ignore", over="ignore"):
            run()

    return run_quietly


# --- TransformTensorBilinear ----------------------------------------------------------------
@register_kernel(Op.TransformTensorBilinear, "cpu")
def transform_tensor_bilinear(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``TransformTensorBilinearV2``: bilinear sampling of (1, H, W, C) through a 4x4 matrix.

    The matrix's first two rows get MediaPipe's half-pixel correction
    ``row[3] += 0.5*row[0] + 0.5*row[1] - 0.5``; output pixel ``(x, y)`` then samples at
    ``row . (x, y, 0, 1)``. Points outside ``[0, W-1] x [0, H-1]`` give 0; the corners past
    the last row/column read 0 (a zero row and column padded onto a copy of the input).
    """
    _require_version(node, 2)
    _require_float32(node, ctx, 2)
    opts = _options(node, TransformTensorBilinearOptions)
    src, m_arr, out = ctx.input(0), ctx.input(1), ctx.output(0)
    shape, mshape = ctx.in_info(0).shape, ctx.in_info(1).shape
    if len(shape) != 4 or shape[0] != 1:
        raise ShapeError(f"node {node.index} ({node.op}): expected input (1, H, W, C), got {list(shape)}")
    if int(np.prod(mshape)) != 16:
        raise ShapeError(f"node {node.index} ({node.op}): expected a 4x4 matrix input, got shape {list(mshape)}")
    _, h, w, c = shape
    oh, ow = opts.output_height, opts.output_width
    if out.shape != (1, oh, ow, c):
        raise ShapeError(f"node {node.index} ({node.op}): expected output {[1, oh, ow, c]} (options "
                         f"output_height={oh}, output_width={ow}), got {list(out.shape)}")
    task = jit.bilinear_task(src, m_arr, out)  # the same float operations, compiled (loops.c)
    if task is not None:
        return task
    npix = oh * ow
    gy, gx = np.meshgrid(np.arange(oh, dtype=np.float32), np.arange(ow, dtype=np.float32), indexing="ij")
    gx, gy = gx.reshape(-1), gy.reshape(-1)
    m_flat = m_arr.reshape(16)
    # Input copied into a buffer with one extra zero row and column: corner (y0+1, x0+1) of a
    # point on the last row/column then reads 0, as MediaPipe's ReadValue does.
    padded = np.zeros((h + 1, w + 1, c), np.float32)
    padded_in = padded[:h, :w]
    table = padded.reshape(-1, c)
    zero_row = table.shape[0] - 1  # padded[h, w]: always 0
    row = np.int64(w + 1)
    tx, ty, t = (np.empty(npix, np.float32) for _ in range(3))
    fx, fy = np.empty(npix, np.float32), np.empty(npix, np.float32)
    outside = np.empty(npix, np.bool_)
    i00, i01 = np.empty(npix, np.int64), np.empty(npix, np.int64)
    i10, i11 = np.empty(npix, np.int64), np.empty(npix, np.int64)
    q = np.empty((4, npix, c), np.float32)
    mix = np.empty((npix, c), np.float32)
    res = out.reshape(npix, c)

    def coords(dst: np.ndarray, r: np.ndarray, offset: np.float32) -> None:
        # float32 dot product in MediaPipe's order: ((r0*x + r1*y) + r2*0) + r3'*1.
        np.multiply(gx, r[0], out=dst)
        np.multiply(gy, r[1], out=t)
        np.add(dst, t, out=dst)
        np.add(dst, r[2] * np.float32(0), out=dst)
        np.add(dst, offset, out=dst)

    def run() -> None:
        # inf/NaN inputs propagate as in the C++ (0 * inf = NaN), without numpy's warnings.
        with np.errstate(invalid="ignore", over="ignore"):
            sample()

    def sample() -> None:
        np.copyto(padded_in, src[0])
        rx, ry = m_flat[0:4], m_flat[4:8]
        # The correction is computed in double and stored to float, as in the C++.
        ox = np.float32(float(rx[3]) + (float(rx[0]) * 0.5 + float(rx[1]) * 0.5 - 0.5))
        oy = np.float32(float(ry[3]) + (float(ry[0]) * 0.5 + float(ry[1]) * 0.5 - 0.5))
        coords(tx, rx, ox)
        coords(ty, ry, oy)
        # NaN coordinates are "inside" in the C++ (every comparison is false) and end up NaN.
        np.less(tx, 0, out=outside)
        outside[:] |= tx > w - 1
        outside[:] |= ty < 0
        outside[:] |= ty > h - 1
        np.floor(tx, out=fx)
        np.floor(ty, out=fy)
        np.subtract(tx, fx, out=tx)  # tx, ty become the right/lower weights
        np.subtract(ty, fy, out=ty)
        bad = outside | ~np.isfinite(fx) | ~np.isfinite(fy)
        fx[bad] = 0
        fy[bad] = 0
        tx[outside] = 0
        ty[outside] = 0
        np.multiply(fy, row, out=i00, casting="unsafe")  # exact: fy and fx are small whole numbers
        np.add(i00, fx, out=i00, casting="unsafe")
        np.add(i00, 1, out=i01)
        np.add(i00, row, out=i10)
        np.add(i10, 1, out=i11)
        for i in (i00, i01, i10, i11):
            i[bad] = zero_row
        np.take(table, i00, axis=0, out=q[0])
        np.take(table, i01, axis=0, out=q[1])
        np.take(table, i10, axis=0, out=q[2])
        np.take(table, i11, axis=0, out=q[3])
        right, lower = tx[:, None], ty[:, None]
        # upper = (1-rc) q11 + rc q21; lower = (1-rc) q12 + rc q22; lc*lower + (1-lc)*upper.
        np.multiply(q[0], 1 - right, out=q[0])
        np.multiply(q[1], right, out=q[1])
        np.add(q[0], q[1], out=q[0])  # upper
        np.multiply(q[2], 1 - right, out=q[2])
        np.multiply(q[3], right, out=q[3])
        np.add(q[2], q[3], out=q[2])  # lower
        np.multiply(q[2], lower, out=mix)
        np.multiply(q[0], 1 - lower, out=q[0])
        np.add(mix, q[0], out=res)

    return run


# --- TransformLandmarks ---------------------------------------------------------------------
@register_kernel(Op.TransformLandmarks, "cpu")
def transform_landmarks(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """``TransformLandmarksV2``: landmarks (1, N, D), D in {2, 3}, through a 4x4 matrix.

    ``x' = m0*x + m1*y + m2*0 + m3``, ``y' = m4*x + m5*y + m6*0 + m7`` in float32 in that
    order; a third coordinate is copied unchanged.
    """
    _require_version(node, 2)
    _require_float32(node, ctx, 2)
    lm, m_arr, out = ctx.input(0), ctx.input(1), ctx.output(0)
    shape, mshape = ctx.in_info(0).shape, ctx.in_info(1).shape
    if len(shape) != 3 or shape[0] != 1 or shape[2] not in (2, 3):
        raise ShapeError(f"node {node.index} ({node.op}): expected landmarks (1, N, 2) or (1, N, 3), "
                         f"got {list(shape)}")
    if int(np.prod(mshape)) != 16:
        raise ShapeError(f"node {node.index} ({node.op}): expected a 4x4 matrix input, got shape {list(mshape)}")
    if out.shape != shape:
        raise ShapeError(f"node {node.index} ({node.op}): expected output {list(shape)}, got {list(out.shape)}")
    task = jit.transform_landmarks_task(lm, m_arr, out)  # the same float operations, compiled (loops.c)
    if task is not None:
        return task
    m_flat = m_arr.reshape(16)
    rx, ry = m_flat[0:4], m_flat[4:8]  # views: the matrix is read at each invoke
    x, y = lm[0, :, 0], lm[0, :, 1]
    ox, oy = out[0, :, 0], out[0, :, 1]
    t = np.empty(shape[1], np.float32)
    has_z = shape[2] == 3

    def row(dst: np.ndarray, r: np.ndarray) -> None:
        np.multiply(x, r[0], out=dst)
        np.multiply(y, r[1], out=t)
        np.add(dst, t, out=dst)
        np.add(dst, r[2] * np.float32(0), out=dst)  # the z term: 0, or NaN for a non-finite m2
        np.add(dst, r[3], out=dst)

    def run() -> None:
        if has_z:
            np.copyto(out[0, :, 2], lm[0, :, 2])
        with np.errstate(invalid="ignore", over="ignore"):  # inf/NaN propagate as in the C++, no warnings
            row(ox, rx)
            row(oy, ry)

    return run
