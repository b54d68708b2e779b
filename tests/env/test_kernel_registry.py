"""The public kernel registry: register_kernel, get_kernels_for_backend, copy_kernels, custom backends."""

from __future__ import annotations

import numpy as np
import pytest

import gpulite
from gpulite import ops
from gpulite.backends.cpu import CpuBackend
from tests.webgpu.support import adapter_problem


@pytest.fixture
def custom():
    """A backend name registered for one test; its kernels and registration are removed afterwards."""
    names = []

    def make(name, factory, priority=1):
        assert gpulite.register_backend(name, factory, priority)
        names.append(name)
        return name
    yield make
    for n in names:
        gpulite.remove_backend(n)
        for op in list(gpulite.get_kernels_for_backend(n)):
            gpulite.unregister_kernel(op, n)


def _add_model() -> bytes:
    from gpulite.testing.tflite_writer import ModelBuilder
    mb = ModelBuilder()
    a = mb.input("a", (2, 3), np.float32)
    b = mb.input("b", (2, 3), np.float32)
    y = mb.tensor("y", (2, 3), np.float32)
    mb.op("ADD", [a, b], [y])
    mb.output(y)
    return mb.build()


def _run(it, *xs):
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def test_get_kernels_for_backend_lists_the_builtin_kernels():
    cpu = gpulite.get_kernels_for_backend("cpu")
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "SOFTMAX", "RESIZE_BILINEAR"} <= set(cpu)
    assert all(callable(f) for f in cpu.values())
    assert gpulite.get_kernels_for_backend("no-such-backend") == {}


def test_register_kernel_on_a_custom_backend_is_used_by_models_and_eager_ops(custom):
    custom("funny", lambda **kw: CpuBackend(**kw))
    gpulite.copy_kernels("cpu", "funny")
    gpulite.unregister_kernel("ADD", "funny")

    def add_is_sub(node, ctx):  # a kernel factory, as in docs/architecture.md
        a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
        return lambda: np.subtract(a, b, out=out)
    gpulite.register_kernel("ADD", "funny", add_is_sub)
    assert gpulite.get_kernels_for_backend("funny")["ADD"] is add_is_sub
    a, b = np.full((2, 3), 5, np.float32), np.full((2, 3), 2, np.float32)
    (y,) = _run(gpulite.Interpreter(model_content=_add_model(), backend="funny"), a, b)
    np.testing.assert_array_equal(y, a - b)
    assert gpulite.set_backend("funny")
    np.testing.assert_array_equal(ops.add(a, b).numpy(), a - b)
    (y,) = _run(gpulite.Interpreter(model_content=_add_model(), backend="cpu"), a, b)
    np.testing.assert_array_equal(y, a + b)  # the stock backend is untouched


def test_register_kernel_refuses_a_second_kernel_for_the_same_pair():
    with pytest.raises(ValueError, match="already registered"):
        gpulite.register_kernel("ADD", "cpu", lambda node, ctx: None)


def test_copy_kernels_inherits_every_kernel_but_keeps_the_backends_own(custom):
    custom("heir", lambda **kw: CpuBackend(**kw))

    def own(node, ctx):
        return lambda: None
    gpulite.register_kernel("RELU", "heir", own)
    n = gpulite.copy_kernels("cpu", "heir")
    cpu, heir = gpulite.get_kernels_for_backend("cpu"), gpulite.get_kernels_for_backend("heir")
    assert n == len(cpu) - 1 and set(heir) == set(cpu)
    assert heir["RELU"] is own and heir["ADD"] is cpu["ADD"]


def test_a_backend_without_kernels_warns_how_to_inherit_them(custom, caplog):
    custom("empty", lambda **kw: CpuBackend(**kw))
    assert gpulite.set_backend("empty")
    assert "gpulite.copy_kernels('webgpu', 'empty')" in caplog.text


@pytest.mark.skipif(bool(adapter_problem()), reason=str(adapter_problem()))
def test_custom_backend_on_the_applications_wgpu_device_runs_a_zoo_model_like_the_stock_backend(custom):
    import wgpu

    from gpulite.backends.webgpu import WebGpuBackend
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    dev = adapter.request_device_sync(label="application device")
    custom("humangpu", lambda **kw: WebGpuBackend(device=dev, **kw), 3)
    assert gpulite.copy_kernels("webgpu", "humangpu") == len(gpulite.get_kernels_for_backend("webgpu"))
    assert gpulite.set_backend("humangpu")

    it = gpulite.Interpreter("face_detection_short_range")  # follows set_backend
    assert it.backend == "humangpu"
    ref = gpulite.Interpreter("face_detection_short_range", backend="webgpu")
    x = np.random.default_rng(0).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    mine, stock = _run(it, x), _run(ref, x)
    assert it._exe.gdev.device is dev and ref._exe.gdev.device is not dev
    assert [p["backend"] for p in it.get_plan()["partitions"]] == ["webgpu"]  # every node on the GPU
    for a, b in zip(mine, stock, strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # same kernels, same device type: identical

    # eager ops on the custom backend run on the application's device too
    with gpulite.tidy():
        t = ops.relu(gpulite.tensor(x))
        assert t.backend == "humangpu" and t.gpu_buffer._device is dev
        np.testing.assert_array_equal(t.numpy(), np.maximum(x, 0))
