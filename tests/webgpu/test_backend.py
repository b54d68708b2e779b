"""The WebGPU backend's machinery: partitions and crossings, pipeline cache, errors, counters."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.environment import env
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.compare import assert_same
from tests.webgpu.support import check_gpu, require_adapter, run

require_adapter()

from gpulite.backends.webgpu import (  # noqa: E402  (needs an adapter to be worth importing)
    GpuDevice,
    KernelError,
    NoAdapterError,
    Program,
    WebGpuBackend,
    adapter_info,
    encode,
    get_device,
)
from gpulite.backends.webgpu.device import submit_count  # noqa: E402
from gpulite.backends.webgpu.program import get_pipeline  # noqa: E402

F32 = np.float32
SHAPE = (1, 6, 5, 4)


def _chain() -> bytes:
    """x + c -> LOGISTIC -> * x: three nodes whose middle one tests can push onto the CPU."""
    mb = ModelBuilder()
    x = mb.input("x", SHAPE, F32)
    c = mb.const("c", np.linspace(-1, 1, SHAPE[-1]).astype(F32))
    a, s, y = (mb.tensor(n, SHAPE, F32) for n in ("a", "s", "y"))
    mb.op("ADD", [x, c], [a])
    mb.op("LOGISTIC", [a], [s])
    mb.op("MUL", [s, x], [y])
    mb.output(y)
    return mb.build()


def _chain_ref(x: np.ndarray) -> np.ndarray:
    a = x + np.linspace(-1, 1, SHAPE[-1]).astype(F32)
    return (1 / (1 + np.exp(-a)) * x).astype(F32)


def _x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-3, 3, SHAPE).astype(F32)


def test_all_gpu_plan_has_one_partition_and_one_submit():
    it = Interpreter(model_content=_chain(), backend="webgpu")
    out, = run(it, [_x()])
    assert_same(out, _chain_ref(_x()), rtol=1e-5)
    plan = it.get_plan()
    assert [p["backend"] for p in plan["partitions"]] == ["webgpu"]
    assert plan["partitions"][0]["dispatches"] == 2  # the LOGISTIC runs in the ADD's epilogue
    assert plan["submits_per_invoke"] == 1 and plan["crossings"] == []
    nbytes = int(np.prod(SHAPE)) * 4
    assert plan["bytes_uploaded_per_invoke"] == nbytes and plan["bytes_read_back_per_invoke"] == nbytes


@pytest.mark.parametrize("how", encode.MODES)
def test_one_queue_submit_per_invoke(how, monkeypatch):
    """Counted where the invoke submits (encode.Recording, not wgpu-py's queue.submit)."""
    if how == "native" and encode.mode() != "native":
        pytest.skip("no C compiler: the native encoder is not built")
    monkeypatch.setenv("GPULITE_WEBGPU_ENCODE", how)
    env().reset()  # read the variable again
    try:
        it = Interpreter(model_content=_chain(), backend="webgpu")
        run(it, [_x()])
        assert it.get_plan()["encoder"] == how
        before = submit_count()
        it.invoke()
        it.get_tensor(it.get_output_details()[0]["index"])
        assert submit_count() - before == 1, "one submit per invoke (get_tensor of an output is free)"
    finally:
        env().reset()


def test_cpu_partition_in_the_middle_crosses_twice():
    it = Interpreter(model_content=_chain(), backend="webgpu", cpu_ops=["LOGISTIC"])
    out, = run(it, [_x()])
    assert_same(out, _chain_ref(_x()), rtol=1e-5)
    plan = it.get_plan()
    assert [p["backend"] for p in plan["partitions"]] == ["webgpu", "cpu", "webgpu"]
    assert plan["partitions"][1]["ops"] == {"LOGISTIC": 1}
    crossings = [(c["name"], c["direction"]) for c in plan["crossings"]]
    assert crossings == [("a", "gpu->cpu"), ("s", "cpu->gpu")]
    assert plan["submits_per_invoke"] == 2


def test_cpu_partition_last_and_counters():
    it = Interpreter(model_content=_chain(), backend="webgpu", cpu_ops=["MUL"])
    out, = run(it, [_x(1)])
    assert_same(out, _chain_ref(_x(1)), rtol=1e-5)
    exe, nbytes = it._exe, int(np.prod(SHAPE)) * 4
    plan = it.get_plan()
    # MUL reads x (an input, already on the host) and s (read back from the GPU once).
    assert [(c["name"], c["direction"]) for c in plan["crossings"]] == [("s", "gpu->cpu")]
    assert exe.bytes_read_back == nbytes
    assert exe.bytes_uploaded == exe.constant_bytes + nbytes
    it.invoke()
    assert exe.bytes_read_back == 2 * nbytes and exe.invokes == 2


def test_declined_node_falls_back_to_cpu():
    # MEAN over every other axis of a rank-9 tensor: five separate reduced runs, more than the
    # WebGPU reduce kernel's four, so it declines the node.
    shape, axes = (2,) * 9, (0, 2, 4, 6, 8)
    mb = ModelBuilder()
    x = mb.input("x", shape, F32)
    r = mb.tensor("r", shape, F32)
    y = mb.tensor("y", (2,) * 4, F32)
    mb.op("RELU", [x], [r])
    mb.op("MEAN", [r, mb.const("axes", np.array(axes, np.int32))], [y], keep_dims=False)
    mb.output(y)
    model = mb.build()
    xv = np.random.default_rng(2).standard_normal(shape).astype(F32)
    it = Interpreter(model_content=model, backend="webgpu")
    out, = run(it, [xv])
    assert_same(out, np.maximum(xv, 0).mean(axis=axes), rtol=1e-5)
    assert [p["backend"] for p in it.get_plan()["partitions"]] == ["webgpu", "cpu"]


def test_op_without_any_kernel_fails_at_allocate():
    mb = ModelBuilder()
    x = mb.input("x", (2, 2), F32)
    y = mb.tensor("y", (2, 2), F32)
    mb.custom_op("NoSuchOpAnywhere", [x], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build(), backend="webgpu")
    with pytest.raises(UnsupportedOpError, match="NoSuchOpAnywhere"):
        it.allocate_tensors()


def test_intermediate_readback_and_repeated_invokes():
    it = Interpreter(model_content=_chain(), backend="webgpu")
    run(it, [_x(3)])
    # "s", the LOGISTIC's output (made by the ADD's epilogue; "a" itself is fused away)
    s_index = next(d["index"] for d in it.get_tensor_details() if d["name"] == "s")
    a = _x(3) + np.linspace(-1, 1, SHAPE[-1]).astype(F32)
    assert_same(it.get_tensor(s_index), 1 / (1 + np.exp(-a)), rtol=1e-6)
    out = it.get_output_details()[0]["index"]
    for seed in (4, 5):  # new inputs give new outputs: nothing stale in the host mirror
        it.set_tensor(it.get_input_details()[0]["index"], _x(seed))
        it.invoke()
        assert_same(it.get_tensor(out), _chain_ref(_x(seed)), rtol=1e-5)


def test_two_interpreters_share_pipelines():
    gdev = get_device()
    a = Interpreter(model_content=_chain(), backend="webgpu")
    a.allocate_tensors()
    cached = len(gdev.pipelines)
    b = Interpreter(model_content=_chain(), backend="webgpu")
    b.allocate_tensors()
    assert len(gdev.pipelines) == cached
    assert a._exe.gdev is b._exe.gdev


def test_input_resize_reuses_pipelines():
    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 3), F32, shape_signature=(1, -1, -1, 3))
    w = mb.const("w", np.random.default_rng(0).standard_normal((5, 3, 3, 3)).astype(F32))
    b = mb.const("b", np.zeros(5, F32))
    y = mb.tensor("y", (1, 8, 8, 5), F32, shape_signature=(1, -1, -1, 5))
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_h=1, stride_w=1)
    mb.output(y)
    model = mb.build()
    gdev = get_device()
    it = Interpreter(model_content=model, backend="webgpu")
    run(it, [np.ones((1, 8, 8, 3), F32)])
    cached = len(gdev.pipelines)
    big = np.random.default_rng(1).standard_normal((1, 13, 11, 3)).astype(F32)
    it.resize_tensor_input(it.get_input_details()[0]["index"], [1, 13, 11, 3])
    out, = run(it, [big])
    assert len(gdev.pipelines) == cached, "sizes must travel in uniforms, not in the pipeline key"
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    ref = LiteRT(model_content=model)
    ref.resize_tensor_input(ref.get_input_details()[0]["index"], [1, 13, 11, 3])
    assert_same(out, run(ref, [big])[0], rtol=1e-5)


def test_grid_larger_than_one_dispatch_dimension():
    # 65535 workgroups of 64 threads cover 4,194,240 elements; more spill into dispatch y.
    shape = (1, 2100, 2100, 1)
    mb = ModelBuilder()
    x = mb.input("x", shape, F32)
    y = mb.tensor("y", shape, F32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    xv = np.random.default_rng(0).standard_normal(shape).astype(F32)
    plan = check_gpu(mb.build(), [xv], rtol=0)
    assert plan["partitions"][0]["dispatches"] == 1


def test_rejected_wgsl_names_the_kernel():
    broken = Program("broken_kernel (1, 2, 3)", ("test-broken",), "fn main( {", 64, (1, 1, 1), bytes(16), 1)
    with pytest.raises(KernelError, match=r"broken_kernel \(1, 2, 3\)"):
        get_pipeline(get_device(), broken)


def test_same_key_different_wgsl_is_refused():
    gdev = GpuDevice()
    src = "@compute @workgroup_size(1) fn main() {}"
    get_pipeline(gdev, Program("a", ("dup",), src, 1, (1, 1, 1), b"", 1))
    with pytest.raises(KernelError, match="already names different WGSL"):
        get_pipeline(gdev, Program("b", ("dup",), src + "\n// other", 1, (1, 1, 1), b"", 1))


def test_adapter_selection_and_info(monkeypatch):
    infos = adapter_info()
    assert infos and {"name", "adapter_type", "backend_type", "features", "limits", "shader_f16"} <= set(infos[0])
    with pytest.raises(NoAdapterError, match="no-such-adapter-xyz"):
        get_device("no-such-adapter-xyz")
    name = infos[0]["name"]
    assert get_device(name[:6]).name.lower().find(name[:6].lower()) >= 0


def test_precision_option():
    with pytest.raises(ValueError, match="precision"):
        WebGpuBackend(precision="int4")
    # fp16 (fallback to fp32 with a logged notice) is tested in test_device.py


def test_close_releases_buffers():
    it = Interpreter(model_content=_chain(), backend="webgpu")
    run(it, [_x()])
    exe = it._exe
    exe.close()
    assert exe.garena.buffer is None and exe._buffers == []
