"""MediaPipe's landmark/transform custom ops (face_landmark_with_attention): Landmarks2TransformMatrix,
TransformTensorBilinear and TransformLandmarks, version 2, float32.

The CPU kernels (``backends/cpu/kernels/mediapipe_ops.py``) are the executable definition;
these follow them. Any case they decline (another version, unexpected shapes) goes to the
CPU kernel, which then raises the proper error at ``allocate_tensors``.
Convolution2DTransposeBias lives in transpose_conv.py.
"""

from __future__ import annotations

import math

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.custom_options import Landmarks2TransformMatrixOptions, TransformTensorBilinearOptions
from gpulite.model.opdefs import Op


def _refs(node: Node, ctx: GpuContext, n_in: int) -> list[TensorRef]:
    """The inputs then the output, after MediaPipe's checks (version 2, arity, float32)."""
    if node.version != 2:
        raise ctx.unsupported(f"op version {node.version} (MediaPipe registers only version 2)")
    if ctx.num_inputs != n_in or len(node.outputs) != 1 or not all(ctx.has_input(i) for i in range(n_in)):
        raise ctx.unsupported(f"expected {n_in} inputs and 1 output")
    refs = [ctx.input(i) for i in range(n_in)] + [ctx.output(0)]
    ctx.require_f32(*refs)
    return refs


def _matrix(ctx: GpuContext, m: TensorRef) -> None:
    if m.size != 16:
        raise ctx.unsupported(f"matrix input {m.shape} is not 4x4")


@register_kernel(Op.Landmarks2TransformMatrix, "webgpu")
def landmarks_to_transform_matrix(node: Node, ctx: GpuContext) -> Program:
    lm, out = _refs(node, ctx, 1)
    opts = ctx.options(Landmarks2TransformMatrixOptions)
    if len(lm.shape) != 3 or lm.shape[2] != 3 or out.shape != (1, 4, 4):
        raise ctx.unsupported(f"landmarks {lm.shape} -> {out.shape} (expected (1, N, 3) -> (1, 4, 4))")
    used = max(max(opts.subset_idxs), opts.left_rotation_idx, opts.right_rotation_idx)
    if used >= lm.shape[0] * lm.shape[1]:
        raise ctx.unsupported(f"options index landmark {used} of {lm.shape}")
    if used >= 1 << 24:
        raise ctx.unsupported(f"landmark index {used} is not exact in float32")
    subset = ctx.upload(np.asarray(opts.subset_idxs, np.float32))  # whole numbers < 2**24: exact
    t = opts.target_rotation_radians
    params = [
        ("lm_off", "u32", lm.offset), ("out_off", "u32", out.offset),
        ("subset_off", "u32", subset.offset), ("subset_n", "u32", len(opts.subset_idxs)),
        ("left", "u32", opts.left_rotation_idx), ("right", "u32", opts.right_rotation_idx),
        ("cos_t", "f32", math.cos(t)), ("sin_t", "f32", math.sin(t)),
        ("half", "vec4f", [opts.output_width / 2.0, opts.output_height / 2.0]),
        ("rel_scale", "vec4f", [opts.scale_x / opts.output_width, opts.scale_y / opts.output_height]),
    ]
    return make_program(f"landmarks_to_transform_matrix {lm.shape}", "landmarks_to_matrix", params, 1,
                        workgroup_size=1)


@register_kernel(Op.TransformTensorBilinear, "webgpu")
def transform_tensor_bilinear(node: Node, ctx: GpuContext) -> Program:
    x, m, out = _refs(node, ctx, 2)
    opts = ctx.options(TransformTensorBilinearOptions)
    _matrix(ctx, m)
    if len(x.shape) != 4 or x.shape[0] != 1 or out.shape != (1, opts.output_height, opts.output_width, x.shape[3]):
        raise ctx.unsupported(f"input {x.shape} -> output {out.shape} with options {opts}")
    _, h, w, c = x.shape
    if max(h, w) >= 1 << 24:
        raise ctx.unsupported(f"input {x.shape}: edge coordinates are not exact in float32")
    params = [
        ("x_off", "u32", x.offset), ("m_off", "u32", m.offset), ("out_off", "u32", out.offset),
        ("in_h", "u32", h), ("in_w", "u32", w), ("c", "u32", c), ("out_w", "u32", opts.output_width),
        ("zero", "f32", 0.0),
    ]
    return make_program(f"transform_tensor_bilinear {x.shape}->{out.shape}", "transform_bilinear", params,
                        out.size)


@register_kernel(Op.TransformLandmarks, "webgpu")
def transform_landmarks(node: Node, ctx: GpuContext) -> Program:
    lm, m, out = _refs(node, ctx, 2)
    _matrix(ctx, m)
    if len(lm.shape) != 3 or lm.shape[0] != 1 or lm.shape[2] not in (2, 3) or out.shape != lm.shape:
        raise ctx.unsupported(f"landmarks {lm.shape} -> {out.shape} (expected (1, N, 2|3), same shape)")
    params = [("lm_off", "u32", lm.offset), ("m_off", "u32", m.offset), ("out_off", "u32", out.offset),
              ("dims", "u32", lm.shape[2]), ("zero", "f32", 0.0)]
    return make_program(f"transform_landmarks {lm.shape}", "transform_landmarks", params, lm.shape[1])
