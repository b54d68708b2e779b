"""Every WebGPU kernel on small single-op models against LiteRT, PReLU fusion, and the
pipeline cache (sizes in uniforms: no new pipelines for a second interpreter or a resize).

Each case asserts that the node really ran on the GPU (one webgpu partition, no crossings),
so a kernel that declines a case and falls back to the CPU fails here instead of passing.
(The shared op suite, tests/ops, asserts the same for every webgpu case.)
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import check_gpu, require_adapter

require_adapter()

F32 = np.float32


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _single(op: str, in_shapes, out_shape, consts=(), custom: bytes | None = None, **opts) -> tuple[bytes, list]:
    """A model with one op: runtime inputs of ``in_shapes`` (None = take the next constant)."""
    mb = ModelBuilder()
    rng, ins, feeds, consts = _rng(1), [], [], list(consts)
    for k, s in enumerate(in_shapes):
        if s is None:
            c = consts.pop(0)
            ins.append(-1 if c is None else mb.const(f"c{k}", c))
        else:
            ins.append(mb.input(f"x{k}", s, F32))
            feeds.append(rng.uniform(-4, 4, s).astype(F32))
    y = mb.tensor("y", out_shape, F32)
    if custom is not None:
        mb.custom_op(op, ins, [y], custom_options=custom)
    else:
        mb.op(op, ins, [y], **opts)
    mb.output(y)
    return mb.build(), feeds


# -- convolutions -------------------------------------------------------------------------
# (input, kernel hw, cout | multiplier, stride, dilation, padding, activation, bias)
CONV = {
    "k3-s1-same-relu6-cout5": ((1, 9, 10, 4), (3, 3), 5, (1, 1), (1, 1), "SAME", "RELU6", True),
    "k3-s2-same": ((1, 9, 10, 4), (3, 3), 8, (2, 2), (1, 1), "SAME", "NONE", True),
    "k3-s2-valid-relu": ((1, 9, 10, 4), (3, 3), 5, (2, 2), (1, 1), "VALID", "RELU", True),
    "k3-d2-same-n1to1": ((1, 11, 9, 4), (3, 3), 6, (1, 1), (2, 2), "SAME", "RELU_N1_TO_1", True),
    "k3-tanh": ((1, 6, 6, 3), (3, 3), 3, (1, 1), (1, 1), "SAME", "TANH", True),
    "k1-valid": ((1, 6, 7, 8), (1, 1), 6, (1, 1), (1, 1), "VALID", "NONE", True),
    "k3x1-rect-batch2": ((2, 9, 6, 3), (3, 1), 4, (2, 1), (1, 1), "SAME", "NONE", True),
    "k2-even": ((1, 6, 6, 3), (2, 2), 7, (1, 1), (1, 1), "SAME", "NONE", True),
}


def _out(n: int, k: int, s: int, d: int, pad: str) -> int:
    eff = (k - 1) * d + 1
    return -(-n // s) if pad == "SAME" else (n - eff) // s + 1


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@pytest.mark.parametrize("case", CONV.values(), ids=CONV.keys())
def test_conv(op, case):
    shape, (kh, kw), m, (sh, sw), (dh, dw), pad, act, has_bias = case
    if op == "DEPTHWISE_CONV_2D":
        m = 2 if m % 2 == 0 else 1  # cover depth multipliers 1 and 2
    co = m if op == "CONV_2D" else shape[3] * m
    w = _rng(2).standard_normal((co, kh, kw, shape[3]) if op == "CONV_2D" else (1, kh, kw, co)).astype(F32)
    b = _rng(3).standard_normal(co).astype(F32) if has_bias else None
    out = (shape[0], _out(shape[1], kh, sh, dh, pad), _out(shape[2], kw, sw, dw, pad), co)
    opts = dict(padding=pad, stride_h=sh, stride_w=sw, dilation_h_factor=dh, dilation_w_factor=dw,
                fused_activation_function=act)
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = m
    model, feeds = _single(op, [shape, None, None], out, [w, b], **opts)
    check_gpu(model, feeds)


@pytest.mark.parametrize("stride,pad", [(2, "SAME"), (2, "VALID"), (1, "SAME")])
def test_transpose_conv(stride, pad):
    x, w = (1, 4, 5, 3), _rng(2).standard_normal((6, 3, 3, 3)).astype(F32)
    oh, ow = (x[1] * stride, x[2] * stride) if pad == "SAME" else ((x[1] - 1) * stride + 3, (x[2] - 1) * stride + 3)
    out = (1, oh, ow, 6)
    model, feeds = _single("TRANSPOSE_CONV", [None, None, x, None], out,
                           [np.array(out, np.int32), w, _rng(3).standard_normal(6).astype(F32)],
                           padding=pad, stride_h=stride, stride_w=stride)
    check_gpu(model, feeds)


def test_convolution_2d_transpose_bias():
    # MediaPipe's custom op as selfie segmentation uses it: SAME, stride 2, 2x2 filter.
    x, w = (1, 5, 6, 4), _rng(2).standard_normal((3, 2, 2, 4)).astype(F32)
    params = struct.pack("<iii", 1, 2, 2)  # TfLiteTransposeConvParams: SAME, stride_w, stride_h
    # MediaPipe's SAME trims max(0, f - (in - 1) % s - 1): 9 rows from 5, 12 columns from 6.
    model, feeds = _single("Convolution2DTransposeBias", [x, None, None], (1, 9, 12, 3),
                           [w, _rng(3).standard_normal(3).astype(F32)], custom=params)
    check_gpu(model, feeds)


# -- elementwise ----------------------------------------------------------------------------
SHAPES = {
    "same": ((1, 4, 5, 3), (1, 4, 5, 3)),
    "channel": ((1, 4, 5, 3), (3,)),
    "scalar": ((2, 3, 4), ()),
    "both-broadcast": ((1, 4, 1, 3), (1, 1, 5, 3)),
    "row": ((6, 7), (6, 1)),
    "rank5": ((1, 2, 3, 4, 5), (5,)),
}


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"])
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
def test_binary(op, shapes):
    a, b = shapes
    out = np.broadcast_shapes(a, b)
    mb = ModelBuilder()
    xa, xb = mb.input("a", a, F32), mb.input("b", b, F32)
    y = mb.tensor("y", out, F32)
    mb.op(op, [xa, xb], [y])
    mb.output(y)
    rng = _rng(4)
    va = rng.uniform(-3, 3, a).astype(F32)
    vb = rng.uniform(0.5, 2, b).astype(F32) * rng.choice([-1, 1], b).astype(F32)  # DIV: |b| >= 0.5
    check_gpu(mb.build(), [va, vb])


@pytest.mark.parametrize("op,act", [("ADD", "RELU"), ("MUL", "RELU6"), ("SUB", "RELU_N1_TO_1")])
def test_binary_fused_activation(op, act):
    model, feeds = _single(op, [(1, 4, 4, 8), (1, 4, 4, 8)], (1, 4, 4, 8), fused_activation_function=act)
    check_gpu(model, feeds)


@pytest.mark.parametrize("alpha_shape", [(1, 1, 3), (3,), (4, 5, 3)])
def test_prelu(alpha_shape):
    alpha = _rng(5).uniform(-0.5, 0.5, alpha_shape).astype(F32)
    model, feeds = _single("PRELU", [(1, 4, 5, 3), None], (1, 4, 5, 3), [alpha])
    check_gpu(model, feeds)


@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "HARD_SWISH", "TANH", "EXP", "NEG",
                                "ABS", "SQUARE"])
def test_unary(op):
    model, feeds = _single(op, [(1, 5, 6, 7)], (1, 5, 6, 7))
    check_gpu(model, feeds)


# -- pooling, resize, reduce ----------------------------------------------------------------
@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
@pytest.mark.parametrize("k,s,pad,act", [((2, 2), 2, "VALID", "NONE"), ((3, 3), 2, "SAME", "NONE"),
                                         ((3, 3), 1, "SAME", "RELU6"), ((3, 2), 1, "VALID", "RELU")])
def test_pool(op, k, s, pad, act):
    shape = (2, 7, 8, 5)
    out = (2, _out(7, k[0], s, 1, pad), _out(8, k[1], s, 1, pad), 5)
    model, feeds = _single(op, [shape], out, padding=pad, stride_h=s, stride_w=s, filter_height=k[0],
                           filter_width=k[1], fused_activation_function=act)
    check_gpu(model, feeds)


@pytest.mark.parametrize("src,dst,align,half", [
    ((1, 4, 5, 3), (8, 10), False, False), ((1, 4, 5, 3), (8, 10), True, False),
    ((1, 4, 5, 3), (8, 10), False, True), ((1, 9, 7, 2), (4, 3), False, True),
    ((2, 5, 5, 2), (7, 9), False, False)])
def test_resize_bilinear(src, dst, align, half):
    out = (src[0], *dst, src[3])
    model, feeds = _single("RESIZE_BILINEAR", [src, None], out, [np.array(dst, np.int32)],
                           align_corners=align, half_pixel_centers=half)
    check_gpu(model, feeds)


@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX"])
@pytest.mark.parametrize("axes,keep", [((1, 2), True), ((1, 2), False), ((3,), True), ((-1,), False),
                                       ((0, 1), False)])
def test_reduce(op, axes, keep):
    shape = (2, 6, 7, 5)
    norm = {a % 4 for a in axes}
    out = tuple(1 if d in norm else n for d, n in enumerate(shape)) if keep else \
        tuple(n for d, n in enumerate(shape) if d not in norm)
    model, feeds = _single(op, [shape, None], out, [np.array(axes, np.int32)], keep_dims=keep)
    check_gpu(model, feeds)


@pytest.mark.parametrize("x,units,keep,bias,act", [((2, 16), 8, False, True, "RELU"),
                                                   ((1, 4, 4, 3), 10, False, False, "NONE"),
                                                   ((1, 3, 16), 9, True, True, "RELU6")])
def test_fully_connected(x, units, keep, bias, act):
    k = x[-1] if keep else int(np.prod(x[1:]))
    out = (*x[:-1], units) if keep else (int(np.prod(x)) // k, units)
    w = _rng(6).standard_normal((units, k)).astype(F32)
    b = _rng(7).standard_normal(units).astype(F32) if bias else None
    model, feeds = _single("FULLY_CONNECTED", [x, None, None], out, [w, b], keep_num_dims=keep,
                           fused_activation_function=act)
    check_gpu(model, feeds)


# -- data movement ------------------------------------------------------------------------
@pytest.mark.parametrize("pads,op,value", [
    ([[0, 0], [0, 0], [0, 0], [0, 3]], "PAD", None), ([[0, 0], [1, 2], [2, 1], [0, 0]], "PAD", None),
    ([[1, 0], [0, 1], [1, 1], [2, 0]], "PADV2", -1.5)])
def test_pad(pads, op, value):
    shape = (1, 4, 5, 3)
    out = tuple(n + a + b for n, (a, b) in zip(shape, pads, strict=True))
    shapes, consts = [shape, None], [np.array(pads, np.int32)]
    if value is not None:
        shapes.append(None)
        consts.append(np.array(value, F32))
    model, feeds = _single(op, shapes, out, consts)
    check_gpu(model, feeds)


@pytest.mark.parametrize("src,dst", [((1, 4, 4, 6), (1, 96)), ((1, 16, 6), (1, 4, 4, 6))])
def test_reshape(src, dst):
    model, feeds = _single("RESHAPE", [src, None], dst, [np.array(dst, np.int32)])
    check_gpu(model, feeds)


@pytest.mark.parametrize("shapes,axis", [(((1, 4, 5, 2), (1, 4, 5, 3)), 3),
                                         (((1, 2, 3), (1, 4, 3), (1, 1, 3)), 1), (((2, 3, 4), (2, 3, 1)), -1)])
def test_concatenation(shapes, axis):
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    model, feeds = _single("CONCATENATION", list(shapes), tuple(out), axis=axis)
    check_gpu(model, feeds)


@pytest.mark.parametrize("relu", ["RELU", "RELU6"])
def test_concatenation_then_relu_is_fused(relu):
    # gpulite's fusion pass moves the RELU into the concatenation; LiteRT runs it separately.
    mb = ModelBuilder()
    a, b = mb.input("a", (1, 3, 4), F32), mb.input("b", (1, 3, 2), F32)
    c, y = mb.tensor("c", (1, 3, 6), F32), mb.tensor("y", (1, 3, 6), F32)
    mb.op("CONCATENATION", [a, b], [c], axis=2)
    mb.op(relu, [c], [y])
    mb.output(y)
    rng = _rng(9)
    plan = check_gpu(mb.build(), [rng.uniform(-8, 8, (1, 3, 4)).astype(F32), rng.uniform(-8, 8, (1, 3, 2)).astype(F32)])
    assert plan["partitions"][0]["ops"] == {"CONCATENATION": 1}, "the RELU was not fused"


def test_concatenation_with_constant():
    model, feeds = _single("CONCATENATION", [(1, 3, 2), None], (1, 3, 5),
                           [_rng(8).standard_normal((1, 3, 3)).astype(F32)], axis=2)
    check_gpu(model, feeds)


@pytest.mark.parametrize("src,block", [((1, 3, 4, 8), 2), ((2, 2, 2, 18), 3)])
def test_depth_to_space(src, block):
    out = (src[0], src[1] * block, src[2] * block, src[3] // block**2)
    model, feeds = _single("DEPTH_TO_SPACE", [src], out, block_size=block)
    check_gpu(model, feeds)


SLICES = {
    "basic": ([0, 1, 0, 2], [1, 7, 9, 5], [1, 2, 1, 1], {}, (1, 3, 9, 3)),
    "masks": ([0, 2, 3, 1], [1, 0, 0, 4], [1, 1, 2, 1], {"begin_mask": 0b0001, "end_mask": 0b0110}, (1, 6, 3, 3)),
    "negative": ([0, -1, 0, 0], [1, 0, 9, 6], [1, -2, 1, 3], {"end_mask": 0b0010}, (1, 4, 9, 2)),
    "shrink": ([0, 2, 0, 4], [1, 3, 9, 5], [1, 1, 1, 1], {"shrink_axis_mask": 0b1001}, (1, 9)),
    "offset": ([0, 1, 2, 0], [1, 3, 4, 6], [1, 1, 1, 1], {"offset": True}, (1, 3, 4, 6)),
}


@pytest.mark.parametrize("case", SLICES.values(), ids=SLICES.keys())
def test_strided_slice(case):
    begin, end, strides, masks, out = case
    model, feeds = _single("STRIDED_SLICE", [(1, 8, 9, 6), None, None, None], out,
                           [np.array(v, np.int32) for v in (begin, end, strides)], **masks)
    check_gpu(model, feeds)


def test_slice():
    model, feeds = _single("SLICE", [(1, 8, 9, 6), None, None], (1, 2, 8, 3),
                           [np.array([0, 1, 1, 2], np.int32), np.array([1, 2, -1, 3], np.int32)])
    check_gpu(model, feeds)


# -- PReLU fused into its producer ------------------------------------------------------------
def _prelu_after(op: str, alpha: np.ndarray, *, extra_reader: bool = False) -> tuple[bytes, list]:
    """x -> op -> PRELU(alpha) -> y (and, with ``extra_reader``, the op's output also a graph output)."""
    rng = _rng(11)
    mb = ModelBuilder()
    shape = (1, 7, 6, 8)
    x = mb.input("x", shape, F32)
    mid = mb.tensor("mid", shape, F32)
    if op == "CONV_2D":
        w = mb.const("w", rng.standard_normal((8, 3, 3, 8)).astype(F32))
        b = mb.const("b", rng.standard_normal(8).astype(F32))
        mb.op(op, [x, w, b], [mid], padding="SAME", stride_h=1, stride_w=1)
    elif op == "DEPTHWISE_CONV_2D":
        w = mb.const("w", rng.standard_normal((1, 3, 3, 8)).astype(F32))
        b = mb.const("b", rng.standard_normal(8).astype(F32))
        mb.op(op, [x, w, b], [mid], padding="SAME", stride_h=1, stride_w=1, depth_multiplier=1)
    else:  # ADD: the residual blocks of the MediaPipe models
        mb.op(op, [x, mb.const("c", rng.standard_normal(8).astype(F32))], [mid])
    y = mb.tensor("y", shape, F32)
    mb.op("PRELU", [mid, mb.const("alpha", alpha)], [y])
    mb.output(y)
    if extra_reader:
        mb.output(mid)
    return mb.build(), [rng.uniform(-4, 4, shape).astype(F32)]


ALPHAS = {"per-channel": np.linspace(-0.5, 1.5, 8, dtype=F32).reshape(1, 1, 8),
          "flat": np.linspace(0.1, 0.8, 8, dtype=F32), "single": np.array([0.25], F32)}


@pytest.mark.parametrize("alpha", ALPHAS.values(), ids=ALPHAS.keys())
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"])
def test_prelu_fused_into_producer(op, alpha):
    from gpulite import Interpreter

    model, feeds = _prelu_after(op, alpha)
    plan = check_gpu(model, feeds)
    assert plan["partitions"][0]["ops"] == {op: 1}, "the PRELU was not fused"
    assert plan["partitions"][0]["dispatches"] == 1
    fused = [n for n in Interpreter(model_content=model, backend="webgpu").graph.nodes if "fused_prelu" in n.attrs]
    assert [n.op for n in fused] == [op]
    # The CPU backend's prepared graph never carries the WebGPU mark (its own fusions differ).
    assert not any("fused_prelu" in n.attrs for n in Interpreter(model_content=model, backend="cpu").graph.nodes)


@pytest.mark.parametrize("why", ["intermediate-is-output", "spatial-alpha", "producer-forced-to-cpu"])
def test_prelu_not_fused(why):
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter
    from tests.compare import assert_same
    from tests.webgpu.support import run

    alpha = _rng(12).uniform(-1, 1, (7, 6, 8)).astype(F32) if why == "spatial-alpha" else ALPHAS["per-channel"]
    model, feeds = _prelu_after("CONV_2D", alpha, extra_reader=why == "intermediate-is-output")
    if why == "producer-forced-to-cpu":  # the CPU conv knows nothing of a fused PReLU
        it = Interpreter(model_content=model, backend="webgpu", cpu_ops=["CONV_2D"])
        assert [p["ops"] for p in (run(it, feeds) and it.get_plan())["partitions"]] == [{"CONV_2D": 1}, {"PRELU": 1}]
        for a, e in zip(run(it, feeds), run(LiteRT(model_content=model), feeds), strict=True):
            assert_same(a, e, rtol=1e-5)
    else:
        plan = check_gpu(model, feeds)
        assert plan["partitions"][0]["ops"] == {"CONV_2D": 1, "PRELU": 1}


# -- pipeline cache: sizes travel in uniforms ---------------------------------------------------
class _CompileSpy:
    """Stands in for a wgpu device, counting shader compilations (one per new pipeline)."""

    def __init__(self, device):
        self._device, self.compiled = device, 0

    def __getattr__(self, name):
        return getattr(self._device, name)

    def create_shader_module(self, **kw):
        self.compiled += 1
        return self._device.create_shader_module(**kw)


def _spied_device():
    from gpulite.backends.webgpu import GpuDevice

    gdev = GpuDevice()  # a private device: a fresh, empty pipeline cache
    spy = _CompileSpy(gdev.device)
    gdev.device = spy
    return gdev, spy


def _resizable(op: str, **opts) -> tuple[bytes, tuple[int, ...]]:
    """A single-op model on a (1, H, W, 8) input whose H and W may be resized (the stored
    output shape is a placeholder: every run resizes the input to another size first)."""
    rng = _rng(13)
    mb = ModelBuilder()
    x = mb.input("x", (1, 5, 5, 8), F32, shape_signature=(1, -1, -1, 8))
    ins, out_c = [x], 8
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w = (8, 3, 3, 8) if op == "CONV_2D" else (1, 3, 3, 8)
        ins += [mb.const("w", rng.standard_normal(w).astype(F32)), mb.const("b", rng.standard_normal(8).astype(F32))]
    elif op in ("ADD", "PRELU"):
        ins.append(mb.const("c", rng.uniform(-1, 1, (1, 1, 8)).astype(F32)))
    elif op in ("MEAN", "TRANSPOSE", "PAD"):
        ins.append(mb.const("p", np.array({"MEAN": [1, 2], "TRANSPOSE": [0, 3, 1, 2],
                                           "PAD": [[0, 0], [1, 2], [2, 1], [0, 0]]}[op], np.int32)))
    elif op in ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"):
        ins.append(mb.const("size", np.array([9, 5], np.int32)))
    y = mb.tensor("y", (1, 5, 5, out_c), F32, shape_signature=(1, -1, -1, out_c))
    mb.op(op, ins, [y], **opts)
    mb.output(y)
    return mb.build()


RESIZABLE = {
    "conv": ("CONV_2D", dict(padding="SAME", stride_h=2, stride_w=1)),
    "depthwise": ("DEPTHWISE_CONV_2D", dict(padding="VALID", stride_h=1, stride_w=1, depth_multiplier=1)),
    "add": ("ADD", {}), "prelu": ("PRELU", {}), "softmax": ("SOFTMAX", dict(beta=1.0)),
    "max_pool": ("MAX_POOL_2D", dict(padding="SAME", stride_h=2, stride_w=2, filter_height=3, filter_width=3)),
    "mean": ("MEAN", dict(keep_dims=True)), "transpose": ("TRANSPOSE", {}), "pad": ("PAD", {}),
    "resize_nearest": ("RESIZE_NEAREST_NEIGHBOR", dict(half_pixel_centers=True)),
    "resize_bilinear": ("RESIZE_BILINEAR", dict(align_corners=True)),
    "space_to_depth": ("SPACE_TO_DEPTH", dict(block_size=2)),
}


@pytest.mark.parametrize("case", RESIZABLE)
def test_resizing_input_compiles_no_new_pipelines(case):
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter
    from tests.compare import assert_same
    from tests.webgpu.support import gpu_only, run

    model = _resizable(*RESIZABLE[case][:1], **RESIZABLE[case][1])
    gdev, spy = _spied_device()
    it = Interpreter(model_content=model, backend="webgpu", device=gdev)
    ref = LiteRT(model_content=model)
    compiled = []
    for k, (h, w) in enumerate([(6, 6), (10, 8), (4, 12), (16, 16)]):
        for interp in (it, ref):  # every size differs from the stored one (whose output is a placeholder)
            interp.resize_tensor_input(interp.get_input_details()[0]["index"], [1, h, w, 8])
        x = _rng(k).uniform(-3, 3, (1, h, w, 8)).astype(F32)
        before = spy.compiled
        out, = run(it, [x])
        compiled.append(spy.compiled - before)
        gpu_only(it.get_plan())
        assert_same(out, run(ref, [x])[0], rtol=1e-5, what=f"{case} at {h}x{w}")
    assert compiled[0] >= 1 and compiled[1:] == [0, 0, 0], f"pipelines compiled per size: {compiled}"


def test_two_interpreters_share_every_pipeline():
    from gpulite import Interpreter
    from tests.webgpu.support import run

    model, feeds = _prelu_after("CONV_2D", ALPHAS["per-channel"])
    gdev, spy = _spied_device()
    a = Interpreter(model_content=model, backend="webgpu", device=gdev)
    run(a, feeds)
    first, cached = spy.compiled, dict(gdev.pipelines)
    b = Interpreter(model_content=model, backend="webgpu", device=gdev)
    out_b, = run(b, feeds)
    assert first >= 1 and spy.compiled == first, "the second interpreter compiled pipelines of its own"
    assert {k: v[1] for k, v in gdev.pipelines.items()} == {k: v[1] for k, v in cached.items()}
    assert b.get_plan()["pipelines"] == a.get_plan()["pipelines"] >= 1
    np.testing.assert_array_equal(out_b, run(a, feeds)[0])


# -- the op suite's placement check (tests/ops/harness.py) -----------------------------------
def test_op_suite_placement_check_catches_cpu_fallback():
    from gpulite import Interpreter
    from tests.ops.harness import NotOnGpuError, check_watched, watch_webgpu
    from tests.webgpu.support import run

    model, feeds = _single("ADD", [(1, 4, 4, 8), (1, 4, 4, 8)], (1, 4, 4, 8))
    with watch_webgpu() as seen:
        run(Interpreter(model_content=model, backend="webgpu"), feeds)
    check_watched(seen)  # all on the GPU: passes
    with watch_webgpu() as seen:  # an interpreter the test builds itself is seen as well
        run(Interpreter(model_content=model, backend="webgpu", cpu_ops=["ADD"]), feeds)
    with pytest.raises(NotOnGpuError, match=r"ADD.*forced onto the cpu"):
        check_watched(seen)


def test_gpu_gap_patterns():
    from tests.ops.expected_failures import GPU_GAPS, gpu_gap

    assert gpu_gap("test_conv.py::test_conv2d_quantized[k1-s1-valid-int8-per-tensor]")[0] == \
        "test_conv.py::test_conv2d_quantized[*]"
    assert gpu_gap("test_conv.py::test_conv2d_float[k1-s1-valid]") is None
    assert gpu_gap("test_elementwise.py::test_binary_integer[int64-ADD]") is not None
    assert gpu_gap("test_elementwise.py::test_binary_integer[int32-ADD]") is None
    assert gpu_gap("test_activations.py::test_softmax[1x10-1.0]") is None  # the float one is not a gap
    assert all(why for _, why in GPU_GAPS)
