"""The application's own device, device limits, device loss and recovery, precision (the fp32
default and the fallback without shader-f16; fp16 itself: test_precision.py), warm-up."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from gpulite import DeviceLimitsError, DeviceLostError, Interpreter
from tests.compare import assert_same
from tests.webgpu.support import require_adapter
from tests.webgpu.tiny_models import SHAPE, chain, chain_ref, x_of

require_adapter()

import wgpu  # noqa: E402

from gpulite.backends.webgpu import GpuDevice, get_device  # noqa: E402

STORAGE_COPY = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def _adapter():
    return wgpu.gpu.request_adapter_sync(power_preference="high-performance")


def _own_device(**kw):
    return _adapter().request_device_sync(label="app", **kw)


def _run(it: Interpreter, x: np.ndarray) -> np.ndarray:
    if it._exe is None:
        it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


# A compute shader of the application's: dst[i] = 2 * src[OFF + i] + 1, reading gpulite's arena.
_APP_WGSL = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x >= $N) { return; }
    dst[g.x] = 2.0 * src[$OFF + g.x] + 1.0;
}
"""


# -- the application's device -------------------------------------------------------------
def test_output_feeds_the_applications_own_compute_shader():
    dev = _own_device()
    it = Interpreter(model_content=chain(), backend="webgpu", device=dev)
    it.allocate_tensors()
    assert it._exe.gdev.device is dev and it._exe.garena.buffer._device is dev
    it.set_tensor(it.get_input_details()[0]["index"], x_of(1))
    it.invoke()
    t = it.get_output_gpu(it.get_output_details()[0]["index"])
    n = int(np.prod(t.shape))
    # The offset satisfies the device's storage-offset alignment (the plan aligns to 256, WebGPU's
    # maximum for that limit); this test binds the whole buffer and indexes from offset / 4.
    assert t.offset % dev.limits["min-storage-buffer-offset-alignment"] == 0
    code = _APP_WGSL.replace("$N", f"{n}u").replace("$OFF", f"{t.offset // 4}u")
    pipeline = dev.create_compute_pipeline(
        layout="auto", compute={"module": dev.create_shader_module(code=code), "entry_point": "main"})
    dst = dev.create_buffer(size=t.nbytes, usage=STORAGE_COPY)
    bg = dev.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": t.buffer, "offset": 0, "size": t.buffer.size}},
        {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": t.nbytes}},
    ])
    enc = dev.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipeline)
    cp.set_bind_group(0, bg)
    cp.dispatch_workgroups(-(-n // 64))
    cp.end()
    dev.queue.submit([enc.finish()])
    got = np.frombuffer(dev.queue.read_buffer(dst), np.float32).reshape(SHAPE)
    assert_same(got, 2 * chain_ref(x_of(1)) + 1, rtol=1e-5)
    it.close()
    assert dev.create_buffer(size=4, usage=wgpu.BufferUsage.STORAGE) is not None, "gpulite never destroys it"


def test_interpreters_on_one_application_device_share_pipelines():
    dev = _own_device()
    a = Interpreter(model_content=chain(), backend="webgpu", device=dev)
    b = Interpreter(model_content=chain(), backend="webgpu", device=dev)
    assert_same(_run(a, x_of(2)), chain_ref(x_of(2)), rtol=1e-5)
    cached = len(a._exe.gdev.pipelines)
    assert_same(_run(b, x_of(3)), chain_ref(x_of(3)), rtol=1e-5)
    assert b._exe.gdev is a._exe.gdev and len(b._exe.gdev.pipelines) == cached
    assert not a._exe.gdev.owns_device


def test_bad_device_argument():
    with pytest.raises(TypeError, match=r"wgpu\.GPUDevice"):
        Interpreter(model_content=chain(), backend="webgpu", device=3.5)


def test_too_small_limits_are_listed_at_allocate():
    dev = _own_device(required_limits={
        "max-compute-workgroup-size-x": 32,
        "max-storage-buffers-per-shader-stage": 1,
        "max-storage-buffer-binding-size": 1024,
    })
    it = Interpreter(model_content=chain(), backend="webgpu", device=dev)  # construction checks nothing yet
    with pytest.raises(DeviceLimitsError) as e:
        it.allocate_tensors()
    msg = str(e.value)
    assert f"#{dev.uid}" in msg
    assert "max-compute-workgroup-size-x: needs 64" in msg and "the device has 32" in msg
    assert re.search(r"max-storage-buffers-per-shader-stage: needs 2 .*the device has 1$", msg, re.M)
    assert "max-storage-buffer-binding-size: needs" in msg and "the device has 1024" in msg
    assert "max-compute-workgroups-per-dimension" not in msg, "only unmet needs are listed"


# -- precision ----------------------------------------------------------------------------
def test_fp32_is_the_default():
    it = Interpreter(model_content=chain(), backend="webgpu")
    it.allocate_tensors()
    plan = it.get_plan()
    assert it.precision == "fp32" and plan["precision"] == "fp32" and plan["precision_requested"] == "fp32"
    assert "precision_note" not in plan
    assert Interpreter(model_content=chain()).precision == "fp32"


def test_fp16_without_shader_f16_falls_back_with_a_logged_notice(caplog):
    dev = _own_device()  # no required_features: shader-f16 is not enabled on it
    assert "shader-f16" not in dev.features
    with caplog.at_level(logging.WARNING, logger="gpulite"):
        it = Interpreter(model_content=chain(), backend="webgpu", device=dev, precision="fp16")
    assert any("lacks the shader-f16 feature" in r.getMessage() and "running in fp32" in r.getMessage()
               for r in caplog.records), caplog.text
    assert_same(_run(it, x_of(4)), chain_ref(x_of(4)), rtol=1e-5)
    plan = it.get_plan()
    assert it.precision == "fp32" and plan["precision"] == "fp32" and plan["precision_requested"] == "fp16"
    assert "lacks the shader-f16 feature" in plan["precision_note"]
    assert "float32 weights, activations and math" in plan["precision_note"] and "fp16" not in plan
    assert {(p.weights, p.math) for part in it._exe.parts for p in part.work} == {("f32", "f32")}


# fp16 on a device with shader-f16 (float16 weights in force): tests/webgpu/test_precision.py


# -- device loss --------------------------------------------------------------------------
def test_lost_application_device_raises_then_recover_works():
    dev = _own_device()
    it = Interpreter(model_content=chain(), backend="webgpu", device=dev)
    assert_same(_run(it, x_of(5)), chain_ref(x_of(5)), rtol=1e-5)
    out = it.get_output_details()[0]["index"]
    handle = it.get_output_gpu(out)
    dev.destroy()
    for call in (it.invoke, lambda: it.get_tensor(out), lambda: it.get_output_gpu(out), handle.data_sync,
                 lambda: it.set_tensor(it.get_input_details()[0]["index"], x_of(6)), it.invoke):
        with pytest.raises(DeviceLostError, match="device was lost"):
            call()
    it.recover()  # onto gpulite's shared device on the same adapter; the input set before carries over
    assert it._exe.gdev.device is not dev
    it.invoke()
    assert_same(it.get_tensor(out), chain_ref(x_of(5)), rtol=1e-5)
    assert_same(_run(it, x_of(7)), chain_ref(x_of(7)), rtol=1e-5)


def test_lost_shared_device_is_replaced_for_recover_and_new_interpreters():
    name = get_device().name  # a name key has its own shared device, so other tests keep theirs
    it = Interpreter(model_content=chain(), backend="webgpu", device=name)
    assert_same(_run(it, x_of(8)), chain_ref(x_of(8)), rtol=1e-5)
    lost = it._exe.gdev
    lost.device.destroy()
    with pytest.raises(DeviceLostError):
        it.invoke()
    fresh = Interpreter(model_content=chain(), backend="webgpu", device=name)
    assert_same(_run(fresh, x_of(9)), chain_ref(x_of(9)), rtol=1e-5)
    assert fresh._exe.gdev is not lost and get_device(name) is fresh._exe.gdev
    it.recover()
    assert it._exe.gdev is fresh._exe.gdev
    assert_same(_run(it, x_of(10)), chain_ref(x_of(10)), rtol=1e-5)


def test_recover_onto_a_given_device():
    it = Interpreter(model_content=chain(), backend="webgpu", device=_own_device())
    _run(it, x_of(11))
    it._exe.gdev.device.destroy()
    new = _own_device()
    it.recover(device=new)
    assert it._exe.gdev.device is new
    assert_same(_run(it, x_of(12)), chain_ref(x_of(12)), rtol=1e-5)


def test_loss_seen_mid_call_is_translated():
    gdev = GpuDevice(device=_own_device())
    buf = gdev.device.create_buffer(size=16, usage=wgpu.BufferUsage.COPY_DST)
    gdev.device.destroy()  # nothing has probed it: the failing wgpu call itself is translated
    with pytest.raises(DeviceLostError, match="seen during set_tensor"):
        with gdev.guard("set_tensor"):
            gdev.queue.write_buffer(buf, 0, np.zeros(4, np.float32))
    assert gdev.lost is not None


def test_loss_by_message_and_other_errors_pass_through():
    # A loss not caused by destroy() (driver reset, GPU hang) shows only as wgpu-native's message.
    gdev = GpuDevice(device=_own_device())
    with pytest.raises(ValueError, match="unrelated"):
        with gdev.guard("invoke"):
            raise ValueError("unrelated")
    assert gdev.lost is None
    with pytest.raises(DeviceLostError, match="Parent device is lost; seen during invoke"):
        with gdev.guard("invoke"):
            raise wgpu.GPUValidationError("Validation Error\n\nCaused by:\n  In wgpuQueueSubmit\n"
                                          "    Parent device is lost")
    with pytest.raises(DeviceLostError):
        gdev.check_alive("later")  # remembered: no probe needed any more


# -- warm-up and pipeline creation --------------------------------------------------------
@pytest.mark.parametrize("threads", ["1", "3"])
def test_pipelines_are_compiled_at_allocate_through_the_async_api(monkeypatch, threads):
    dev = _own_device()
    calls = []
    orig = type(dev).create_compute_pipeline_async

    def spy(self, **kw):
        calls.append(kw["label"])
        return orig(self, **kw)

    monkeypatch.setattr(type(dev), "create_compute_pipeline_async", spy)
    monkeypatch.setenv("GPULITE_PIPELINE_THREADS", threads)  # both paths, whatever the adapter
    it = Interpreter(model_content=chain(), backend="webgpu", device=dev)
    it.allocate_tensors()
    assert len(calls) == 2 == len(it._exe.gdev.pipelines)  # ADD (the LOGISTIC in its epilogue), MUL
    seconds = it.warmup()
    assert seconds > 0 and len(it._exe.gdev.pipelines) == 2, "warm-up compiles nothing new"
    assert_same(_run(it, x_of(13)), chain_ref(x_of(13)), rtol=1e-5)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_rejected_kernel_at_allocate_names_the_kernel(monkeypatch, threads):
    from gpulite.backends.webgpu import KernelError, Program
    from gpulite.backends.webgpu.pipelines import prepare_pipelines

    gdev = GpuDevice(device=_own_device())
    good = "@compute @workgroup_size(1) fn main() {}"
    progs = [Program("fine", ("t-fine",), good, 1, (1, 1, 1), b"", 1),
             Program("broken_kernel (2, 3)", ("t-broken",), "fn main( {", 1, (1, 1, 1), b"", 1)]
    monkeypatch.setenv("GPULITE_PIPELINE_THREADS", threads)
    with pytest.raises(KernelError, match=r"broken_kernel \(2, 3\)"):
        prepare_pipelines(gdev, progs)
    assert ("t-fine",) in gdev.pipelines and ("t-broken",) not in gdev.pipelines


def test_warmup_waits_for_gpu_outputs():
    it = Interpreter(model_content=chain(), backend="webgpu", outputs_on_gpu=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x_of(14))
    assert it.warmup() > 0
    assert it.transfer_stats()["invokes"] == 1 and it.transfer_stats()["bytes_read_back"] == 0
    assert_same(it.get_tensor(it.get_output_details()[0]["index"]), chain_ref(x_of(14)), rtol=1e-5)


# -- the pipeline's GPU image path: limits checked before anything is sent ---------------------
def test_a_frame_over_the_device_limits_is_refused_up_front():
    from gpulite.backends.webgpu.pipeline import ImageToTensorGpu, transfer_stats
    from gpulite.pipeline import GpuImage

    mib = 1 << 20
    dev = _own_device(required_limits={"max-storage-buffer-binding-size": mib, "max-buffer-size": 2 * mib})
    gpu, a = ImageToTensorGpu(GpuDevice(device=dev)), np.array([[1, 0, 0], [0, 1, 0]], np.float32)
    before = transfer_stats()
    with pytest.raises(DeviceLimitsError) as e:
        gpu.run(np.zeros((1000, 1000, 3), np.uint8), a, 128, 128, "zero", 1.0, 0.0)
    msg = str(e.value)
    assert f"#{dev.uid}" in msg and "cannot run ImageToTensor on a 1000x1000 frame (3 channels, 3000000 bytes)" in msg
    assert f"max-storage-buffer-binding-size: needs 3000000 (the frame, bound whole by image_to_tensor.wgsl), " \
           f"the device has {mib}" in msg
    assert f"max-buffer-size: needs 3000000 (the frame's buffer), the device has {2 * mib}" in msg
    assert transfer_stats() == before, "nothing was uploaded"
    # The output tensor and a texture's padded copy are checked the same way.
    with pytest.raises(DeviceLimitsError, match=r"max-storage-buffer-binding-size: needs 1228800 \(the 320x320 input"):
        gpu.run(np.zeros((8, 8, 3), np.uint8), a, 320, 320, "zero", 1.0, 0.0)
    texture = dev.create_texture(size=(600, 600, 1), format="rgba8unorm",
                                 usage=wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.COPY_DST)
    with pytest.raises(DeviceLimitsError, match=r"600x600 rgba8unorm GpuImage texture.*\n.*needs 1536000"):
        gpu.run(GpuImage(texture, 600, 600, "rgba8unorm", dev), a, 128, 128, "zero", 1.0, 0.0)
    # A frame within the limits still runs on the same object.
    out = gpu.run(np.full((64, 64, 3), 255, np.uint8), a, 32, 32, "zero", 1 / 255, 0.0).data_sync()
    assert out.shape == (1, 32, 32, 3) and np.allclose(out, 1.0)


def test_a_detection_decoder_over_the_device_limits_is_refused_up_front():
    from gpulite.backends.webgpu.pipeline import DetectionDecoderGpu
    from gpulite.pipeline.calculators.tensors_to_detections import TensorsToDetectionsOptions

    dev = _own_device(required_limits={"max-storage-buffer-binding-size": 1 << 17})
    options = TensorsToDetectionsOptions(num_boxes=2304)  # 2304 records of 19 words: 175104 bytes
    with pytest.raises(DeviceLimitsError) as e:
        DetectionDecoderGpu(np.zeros((2304, 4), np.float32), options, device=GpuDevice(device=dev))
    msg = str(e.value)
    assert "cannot run TensorsToDetections on 2304 boxes" in msg
    assert "max-storage-buffer-binding-size: needs 175104 (the decoded records), the device has 131072" in msg
    # BlazeFace's 896 boxes (68096 bytes of records) fit the same device.
    assert DetectionDecoderGpu(np.zeros((896, 4), np.float32), TensorsToDetectionsOptions(),
                               device=GpuDevice(device=dev)).num_boxes == 896


def test_an_opengl_adapter_compiles_pipelines_on_one_thread_whatever_the_override(monkeypatch):
    """wgpu's GLES backend panics (EGL BadAccess, a process abort) when a pipeline is created off
    the GL context's thread: seen with GPULITE_PIPELINE_THREADS=3 on Mesa's llvmpipe GL adapter."""
    from types import SimpleNamespace

    from gpulite.backends.webgpu.pipelines import ENV_THREADS, _threads

    monkeypatch.setenv(ENV_THREADS, "3")
    gdev = SimpleNamespace(adapter=SimpleNamespace(info={"backend_type": "OpenGL", "adapter_type": "CPU"}))
    assert _threads(gdev, 10) == 1
    gdev.adapter.info["backend_type"] = "Vulkan"
    assert _threads(gdev, 10) == 3
