"""The invoke's recording (backends/webgpu/encode.py) and wait types: the native and Python
encoders give the same results, a recording never outlives its plan or bakes in a binding,
``wait="active"`` equals ``"passive"``, and an encoder that cannot be built falls back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.environment import env
from tests.compare import assert_same
from tests.webgpu.support import require_adapter
from tests.webgpu.tiny_models import chain, chain_ref, x_of

require_adapter()

import wgpu  # noqa: E402

from gpulite.backends.webgpu import KernelError, encode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
needs_native = pytest.mark.skipif(encode.mode() != "native", reason="no C compiler: the native encoder is not built")


def _outputs(model: str, feeds: list[np.ndarray], **opts) -> tuple[list[np.ndarray], Interpreter]:
    it = Interpreter(model_path=model, backend="webgpu", **opts)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()], it


@needs_native
@pytest.mark.parametrize("model", ["face_detection_short_range", "selfie_segmentation"])
def test_native_and_python_encoders_give_the_same_bits(model, monkeypatch):
    rng = np.random.default_rng(3)
    probe = Interpreter(model_path=model, backend="webgpu")
    feeds = [rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]) for d in probe.get_input_details()]
    native, it = _outputs(model, feeds)
    assert it.get_plan()["encoder"] == "native" and it._exe._recordings[0].how == "native"
    try:
        with monkeypatch.context() as m:
            m.setenv("GPULITE_WEBGPU_ENCODE", "python")
            env().reset()  # read the variable again
            python, it = _outputs(model, feeds)
    finally:
        env().reset()
    assert it.get_plan()["encoder"] == "python" and it._exe._recordings[0].how == "python"
    for a, b in zip(native, python, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("how", encode.MODES)
def test_recordings_skip_repeated_pipelines_only(how):
    """Two dispatches of one pipeline in a row: the same calls as wgpu-py's loop minus one
    set_pipeline, and the same values."""
    if how == "native" and encode.mode() != "native":
        pytest.skip("no C compiler: the native encoder is not built")
    it = Interpreter(model_content=chain(), backend="webgpu")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x_of(2))
    exe = it._exe
    (k, dispatches), = exe._dispatches.items()
    exe.encoder = how
    rec = exe._recording(k, [dispatches[0], *dispatches], exe._readbacks[k], exe._checks)  # the ADD twice
    assert len(rec) == len(dispatches) + 1 and rec.how == how
    exe._recordings[k] = rec
    it.invoke()
    assert_same(it.get_tensor(it.get_output_details()[0]["index"]), chain_ref(x_of(2)), rtol=1e-5)


def test_invoke_after_close_and_bad_encoders_are_refused():
    it = Interpreter(model_content=chain(), backend="webgpu")
    it.allocate_tensors()
    exe = it._exe
    exe.close()
    with pytest.raises(RuntimeError, match="closed"):
        exe.invoke()
    assert exe._recordings == {}  # no raw handle outlives the plan's objects
    with pytest.raises(ValueError, match="encoder 'fast'"):
        encode.Recording(exe.gdev.device, exe.gdev.queue, [], "fast")
    with pytest.raises(ValueError, match="wait must be one of"):
        Interpreter(model_content=chain(), backend="webgpu", wait="busy")


def test_rebound_inputs_are_read_by_the_recorded_plan():
    """The recording holds only dispatches: a binding made or changed after allocate is used."""
    it = Interpreter(model_content=chain(), backend="webgpu", outputs_on_gpu=True)
    it.allocate_tensors()
    dev = it._exe.gdev.device
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    a, b = (dev.create_buffer_with_data(data=x_of(s).tobytes(), usage=usage) for s in (4, 5))
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    for buf, seed in ((a, 4), (b, 5), (a, 4)):
        it.bind_input(i, buf)
        it.invoke()
        assert_same(it.get_tensor(o), chain_ref(x_of(seed)), rtol=1e-5)
    it.bind_input(i, None)
    it.set_tensor(i, x_of(6))
    it.invoke()
    assert_same(it.get_tensor(o), chain_ref(x_of(6)), rtol=1e-5)


def _encoder(how: str, monkeypatch) -> None:
    """Make new plans use encoder ``how`` (the flag, read again); skip when it cannot be built."""
    if how == "native" and encode.mode() != "native":
        pytest.skip("no C compiler: the native encoder is not built")
    monkeypatch.setenv("GPULITE_WEBGPU_ENCODE", how)
    env().reset()


@pytest.fixture(autouse=True)
def _flags_read_again():
    yield
    env().reset()  # after monkeypatch has put the environment back


def _native_counts() -> dict[str, int]:
    """What wgpu-native's registry holds, per kind (registered by importing its backend)."""
    return {k: v["count"] for k, v in wgpu.diagnostics.wgpu_native_counts.get_dict().items()}


@pytest.mark.parametrize("how", encode.MODES)
def test_every_invoke_path_gives_the_reference_and_leaves_no_native_object(how, monkeypatch):
    """Each kind of submit an invoke makes (one GPU partition read back or resident, GPU-CPU-GPU
    partitions, a bound input copied on the GPU or read by a CPU kernel), with either encoder:
    the reference values, and wgpu-native's registry as it was (every encoder, pass and command
    buffer released)."""
    _encoder(how, monkeypatch)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    cases = [({}, False), ({"outputs_on_gpu": True}, False), ({"cpu_ops": ["LOGISTIC"]}, False),
             ({}, True), ({"cpu_ops": ["ADD"]}, True)]
    for opts, bound in cases:
        it = Interpreter(model_content=chain(), backend="webgpu", **opts)
        it.allocate_tensors()
        assert it.get_plan()["encoder"] == how
        i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
        buf = it._exe.gdev.device.create_buffer_with_data(data=x_of(8).tobytes(), usage=usage) if bound else None

        def step(seed: int, it=it, i=i, buf=buf) -> None:
            if buf is None:
                it.set_tensor(i, x_of(seed))
            else:
                it.bind_input(i, buf)
            it.invoke()

        step(7)
        it._exe.wait()
        before = _native_counts()
        for k in range(30):
            step(k)
        step(7)
        assert_same(it.get_tensor(o), chain_ref(x_of(8 if bound else 7)), rtol=1e-5, what=f"{opts} bound={bound}")
        it._exe.wait()
        assert _native_counts() == before, f"{opts} bound={bound}: wgpu-native objects left behind"
        it.close()


@pytest.mark.parametrize("how", encode.MODES)
def test_an_encoding_error_raises_and_nothing_invalid_is_submitted(how, monkeypatch):
    """wgpu-native reports a dispatch over the workgroup limit when the encoder finishes, and
    aborts the process if the invalid command buffer is then submitted: the invoke raises the
    reported error instead, and the plan runs on afterwards."""
    _encoder(how, monkeypatch)
    it = Interpreter(model_content=chain(), backend="webgpu")
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    it.set_tensor(i, x_of(3))
    exe = it._exe
    (k, dispatches), = exe._dispatches.items()
    own = exe._recordings[k]
    limit = exe.gdev.limits["max-compute-workgroups-per-dimension"]
    bad = [(p, bg, (limit + 1, 1, 1)) for p, bg, _ in dispatches]
    exe._recordings[k] = exe._recording(k, bad, exe._readbacks[k], exe._checks)
    with pytest.raises(KernelError, match=rf"(?s)partition {k} .*rejected.*{limit + 1}.*less or equal to {limit}"):
        it.invoke()
    exe._recordings[k] = own
    it.invoke()
    assert_same(it.get_tensor(o), chain_ref(x_of(3)), rtol=1e-5)


@pytest.mark.parametrize("model", ["hand_recrop"])
def test_active_wait_gives_the_passive_results(model):
    feeds = [np.random.default_rng(4).uniform(-1, 1, (1, 256, 256, 3)).astype(np.float32)]
    passive, it = _outputs(model, feeds)
    assert it.get_plan()["wait"] == "passive"
    active, it = _outputs(model, feeds, wait="active")
    assert it.get_plan()["wait"] == "active"
    for a, b in zip(passive, active, strict=True):
        np.testing.assert_array_equal(a, b)
    it.warmup()  # the fence waits the same way
    _, it = _outputs(model, feeds, outputs_on_gpu=True)
    assert it.get_plan()["wait"] == "do-not-wait"


def test_without_a_compiler_the_python_encoder_runs(tmp_path):
    code = ("import numpy as np\n"
            "from gpulite.backends.webgpu import encode\n"
            "from gpulite import Interpreter\n"
            "from tests.webgpu.tiny_models import chain, chain_ref, x_of\n"
            "assert encode.mode() == 'python', encode.status()\n"
            "print(encode.status())\n"
            "it = Interpreter(model_content=chain(), backend='webgpu'); it.allocate_tensors()\n"
            "it.set_tensor(it.get_input_details()[0]['index'], x_of(1)); it.invoke()\n"
            "np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]['index']), chain_ref(x_of(1)),"
            " rtol=1e-5)\n"
            "assert it.get_plan()['encoder'] == 'python'\n")
    env = dict(os.environ, GPULITE_CC=str(tmp_path / "no-such-cc"), GPULITE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT))
    env.pop("GPULITE_WEBGPU_ENCODE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "native encoder unavailable" in done.stdout and "GPULITE_CC=" in done.stdout
