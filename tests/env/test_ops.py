"""Eager ops against numpy, on the numpy backend and on WebGPU (where they must run on the GPU)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import gpulite
from gpulite import ops, runtime
from tests.env.conftest import use_backend

RNG = np.random.default_rng(7)


def r(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def check(t: gpulite.Tensor, expected: np.ndarray, backend: str, *, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Values, shape and dtype; on webgpu also that the op ran there (a CPU fallback leaves host data)."""
    assert t.backend == backend
    if backend == "webgpu":
        assert t.on_gpu, "the op fell back to the CPU kernel"
    got = t.numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


# -- numpy references ------------------------------------------------------------------------
def _same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return out, total // 2, total - total // 2


def conv_ref(x, w, b, stride, padding, dil=1, depthwise=False):
    n, h, wd, c = x.shape
    _, kh, kw, co = (w.shape if depthwise else (w.shape[0], w.shape[1], w.shape[2], w.shape[0]))
    if padding == "same":
        oh, pt, pb = _same_pads(h, kh, stride, dil)
        ow, pl, pr = _same_pads(wd, kw, stride, dil)
    else:
        oh, ow = (h - (kh - 1) * dil - 1) // stride + 1, (wd - (kw - 1) * dil - 1) // stride + 1
        pt = pb = pl = pr = 0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0))).astype(np.float64)
    out = np.zeros((n, oh, ow, co))
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dil, i * dil + (oh - 1) * stride + 1, stride)
            cols = slice(j * dil, j * dil + (ow - 1) * stride + 1, stride)
            patch = xp[:, rows, cols]
            if depthwise:
                out += np.repeat(patch, co // c, axis=3) * w[0, i, j]
            else:
                out += patch @ w[:, i, j, :].T.astype(np.float64)
    return (out + b).astype(np.float32)


def resize_ref(x, oh, ow, align_corners=False, half_pixel_centers=False):
    _, h, w, _ = x.shape

    def coords(o, i):
        scale = (i - 1) / (o - 1) if align_corners and o > 1 else i / o
        src = (np.arange(o) + 0.5) * scale - 0.5 if half_pixel_centers else np.arange(o) * scale
        src = np.maximum(src, 0) if half_pixel_centers else src
        lo = np.minimum(np.floor(src).astype(int), i - 1)
        hi = np.minimum(lo + 1, i - 1)
        return lo, hi, (src - np.floor(src)).astype(np.float32)
    y0, y1, fy = coords(oh, h)
    x0, x1, fx = coords(ow, w)
    top = x[:, y0][:, :, x0] * (1 - fx)[None, None, :, None] + x[:, y0][:, :, x1] * fx[None, None, :, None]
    bot = x[:, y1][:, :, x0] * (1 - fx)[None, None, :, None] + x[:, y1][:, :, x1] * fx[None, None, :, None]
    return (top * (1 - fy)[None, :, None, None] + bot * fy[None, :, None, None]).astype(np.float32)


def pool_ref(x, k, s, kind):
    _, h, w, _ = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    win = np.stack([x[:, i:i + (oh - 1) * s + 1:s, j:j + (ow - 1) * s + 1:s] for i in range(k) for j in range(k)])
    return win.max(0) if kind == "max" else win.mean(0, dtype=np.float32)


# -- ops ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("stride", "padding", "dil", "act"), [(1, "same", 1, None), (2, "same", 1, "relu"),
                                                                (1, "valid", 2, "relu6"), (2, "valid", 1, None)])
def test_conv2d(backend, stride, padding, dil, act):
    x, w, b = r(1, 9, 10, 5), r(8, 3, 3, 5), r(8)
    y = ops.conv2d(gpulite.tensor(x), gpulite.tensor(w), gpulite.tensor(b), strides=stride, padding=padding,
                   dilations=dil, activation=act)
    ref = conv_ref(x, w, b, stride, padding, dil)
    ref = np.maximum(ref, 0) if act == "relu" else np.clip(ref, 0, 6) if act == "relu6" else ref
    check(y, ref, backend, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("stride", "padding", "mult"), [(1, "same", 1), (2, "same", 2), (1, "valid", 1)])
def test_depthwise_conv2d(backend, stride, padding, mult):
    x, w, b = r(1, 8, 7, 4), r(1, 3, 3, 4 * mult), r(4 * mult)
    y = ops.depthwise_conv2d(gpulite.tensor(x), w, b, strides=stride, padding=padding)  # numpy weights too
    check(y, conv_ref(x, w, b, stride, padding, depthwise=True), backend, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("sa", "sb", "ta", "tb"), [
    ((4, 5), (5, 3), False, False), ((2, 5, 4), (2, 5, 3), True, False),
    ((3, 4, 5), (6, 5), False, True), ((1, 2, 3), (2, 3, 4), False, False)])
def test_matmul(backend, sa, sb, ta, tb):
    a, b = r(*sa), r(*sb)
    ref = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    check(ops.matmul(a, b, transpose_a=ta, transpose_b=tb), ref.astype(np.float32), backend, atol=1e-5)


@pytest.mark.parametrize(("name", "fn"), [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                          ("div", np.divide), ("maximum", np.maximum), ("minimum", np.minimum)])
@pytest.mark.parametrize(("sa", "sb"), [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5))])
def test_binary(backend, name, fn, sa, sb):
    a, b = r(*sa), r(*sb, lo=0.5, hi=2.0)
    check(getattr(ops, name)(gpulite.tensor(a), gpulite.tensor(b)), fn(a, b), backend)


@pytest.mark.parametrize(("name", "fn", "lo"), [
    ("relu", lambda x: np.maximum(x, 0), -2), ("relu6", lambda x: np.clip(x, 0, 6), -8),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), -8), ("tanh", np.tanh, -4), ("exp", np.exp, -4),
    ("sqrt", np.sqrt, 0.01), ("rsqrt", lambda x: 1 / np.sqrt(x), 0.01),
    ("hard_swish", lambda x: x * np.clip(x + 3, 0, 6) / 6, -8),
])
def test_unary(backend, name, fn, lo):
    x = r(3, 17, lo=lo, hi=8)
    check(getattr(ops, name)(x), fn(x).astype(np.float32), backend, rtol=2e-6 if name != "exp" else 1e-5)


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_softmax(backend, beta):
    x = r(3, 10, lo=-5, hi=5)
    e = np.exp(beta * (x - x.max(-1, keepdims=True)))
    check(ops.softmax(x, beta=beta), (e / e.sum(-1, keepdims=True)).astype(np.float32), backend, rtol=1e-5)
    with pytest.raises(ValueError, match="last axis"):
        ops.softmax(x, axis=0)


@pytest.mark.parametrize(("size", "ac", "hp"), [
    ((12, 9), False, False), ((5, 4), True, False), ((11, 17), False, True)])
def test_resize_bilinear(backend, size, ac, hp):
    x = r(1, 6, 7, 3)
    y = ops.resize_bilinear(x, size, align_corners=ac, half_pixel_centers=hp)
    check(y, resize_ref(x, *size, ac, hp), backend, rtol=1e-5, atol=1e-6)
    y3 = ops.resize_bilinear(x[0], size, align_corners=ac, half_pixel_centers=hp)  # HWC in, HWC out
    check(y3, resize_ref(x, *size, ac, hp)[0], backend, rtol=1e-5, atol=1e-6)


def test_pad(backend):
    x = r(1, 3, 4, 2)
    p = [[0, 0], [1, 2], [2, 0], [0, 1]]
    check(ops.pad(x, p), np.pad(x, p), backend)
    check(ops.pad(x, p, 1.5), np.pad(x, p, constant_values=1.5), backend)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(backend, axis):
    parts = [r(2, 3, 4), r(2, 3, 4), r(2, 3, 4)]
    check(ops.concat([gpulite.tensor(p) for p in parts], axis), np.concatenate(parts, axis), backend)


def test_reshape(backend):
    x = r(2, 3, 4)
    check(ops.reshape(x, (4, -1)), x.reshape(4, 6), backend)
    with pytest.raises(ValueError, match="24 elements"):
        ops.reshape(x, (5, 5))


@pytest.mark.parametrize("perm", [None, (0, 2, 1), (2, 0, 1)])
def test_transpose(backend, perm):
    x = r(2, 3, 4)
    check(ops.transpose(x, perm), np.transpose(x, perm), backend)


@pytest.mark.parametrize(("axis", "keep"), [(None, False), (1, True), ((1, 2), False), (-1, False)])
def test_reductions(backend, axis, keep):
    x = r(2, 3, 4)
    check(ops.mean(x, axis, keep), x.mean(axis, keepdims=keep, dtype=np.float32), backend, atol=1e-6)
    check(ops.sum(x, axis, keep), x.sum(axis, keepdims=keep, dtype=np.float32), backend, atol=1e-6)
    check(ops.max(x, axis, keep), x.max(axis, keepdims=keep), backend)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argmax(backend, axis):
    x = r(3, 5, 4)
    check(ops.argmax(x, axis), np.argmax(x, axis).astype(np.int32), backend)


def test_slice(backend):
    x = r(3, 5, 4)
    check(ops.slice(x, [1, 0, 2], [2, -1, 2]), x[1:3, :, 2:4], backend)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pools(backend, kind):
    x = r(1, 8, 9, 3)
    fn = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    check(fn(x, 3, 2), pool_ref(x, 3, 2, kind), backend, rtol=1e-6)


# -- compile cache, fallback, weights --------------------------------------------------------
def test_each_signature_compiles_once(backend):
    x = gpulite.tensor(r(4, 6))
    ops.add(x, x)
    n = runtime.cache_size()
    ops.add(x, x)
    ops.add(x, gpulite.tensor(r(4, 6)))
    assert runtime.cache_size() == n  # same op, shapes, dtypes, options: the cached compile
    ops.add(x, gpulite.tensor(r(6)))
    assert runtime.cache_size() == n + 1  # new shapes: compiled once more
    ops.add(x, x)
    assert runtime.cache_size() == n + 1


def test_new_shapes_reuse_gpu_pipelines():
    use_backend("webgpu")
    gdev = runtime.find_backend("webgpu").gdev
    ops.resize_bilinear(r(1, 5, 5, 3), (7, 7))
    pipelines = len(gdev.pipelines)
    for s in (4, 9, 13):
        ops.resize_bilinear(r(1, s, s, 3), (s + 2, s + 1))
    assert len(gdev.pipelines) == pipelines  # sizes travel in uniforms, not in the WGSL


@pytest.fixture
def declining_gpu():
    """A WebGPU backend whose ADD kernel declines every node (as kernels do for cases they lack)."""
    use_backend("webgpu")
    from gpulite.backends.webgpu import WebGpuBackend

    def add_declines(node, ctx):
        raise ctx.unsupported("declined for the test")
    assert gpulite.register_backend("declining", lambda **kw: WebGpuBackend(**kw), 0)
    gpulite.register_kernel("ADD", "declining", add_declines)
    gpulite.copy_kernels("webgpu", "declining")
    yield "declining"
    gpulite.remove_backend("declining")
    for op in list(gpulite.get_kernels_for_backend("declining")):
        gpulite.unregister_kernel(op, "declining")


def test_an_op_the_gpu_kernel_declines_runs_on_the_cpu_kernel(declining_gpu, caplog):
    assert gpulite.set_backend(declining_gpu)
    a = gpulite.tensor(np.arange(6, dtype=np.float32))
    with caplog.at_level(logging.INFO, logger="gpulite.ops.dispatch"):
        y = ops.add(a, a)
    assert "runs on the cpu" in caplog.text and "declined for the test" in caplog.text
    assert y.backend == declining_gpu and not y.on_gpu  # made on the host by the CPU kernel
    np.testing.assert_array_equal(y.numpy(), np.arange(6, dtype=np.float32) * 2)
    z = ops.mul(y, 2.0)  # the CPU result is uploaded on its first GPU use
    assert y.on_gpu and z.on_gpu
    np.testing.assert_array_equal(z.numpy(), np.arange(6, dtype=np.float32) * 4)


def test_disposing_a_weight_evicts_the_ops_compiled_with_it(backend):
    x, w = gpulite.tensor(r(1, 5, 5, 2)), gpulite.tensor(r(3, 3, 3, 2))
    n = runtime.cache_size()
    ops.conv2d(x, w)
    assert runtime.cache_size() == n + 1
    w.dispose()
    assert runtime.cache_size() == n


def test_shape_errors_say_what_was_expected(backend):
    with pytest.raises(gpulite.ShapeError, match="do not broadcast"):
        ops.add(r(2, 3), r(4))
    with pytest.raises(ValueError, match="inner dimensions 3 and 4 differ"):
        ops.matmul(r(2, 3), r(4, 2))
    with pytest.raises(ValueError, match=r"TFLite OHWI"):
        ops.conv2d(r(1, 4, 4, 3), r(3, 3, 2, 8))


def test_buffers_named_by_unsubmitted_commands_are_destroyed_only_after_the_submit():
    # Submitting an encoder that names a destroyed buffer aborts the process in wgpu-native,
    # so evictions and pool trims must wait for the pending encoder.
    use_backend("webgpu")
    exe = runtime.eager_executor()
    x, w = gpulite.tensor(r(1, 5, 5, 2)), gpulite.tensor(r(3, 3, 3, 2))
    xv, wv = x.numpy(), w.numpy()
    y = ops.conv2d(x, w)
    z = ops.relu(y)
    assert exe._encoder is not None  # recorded, not yet submitted
    w.dispose()  # evicts the compiled conv: its arena is named by the pending commands
    y.dispose()  # y's buffer goes back to the pool while z's pending copy-in still reads it
    exe.pool.trim()
    np.testing.assert_allclose(z.numpy(), np.maximum(conv_ref(xv, wv, 0, 1, "same"), 0), rtol=1e-5, atol=1e-5)
