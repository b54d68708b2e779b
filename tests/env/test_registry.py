"""The backend registry: register/remove/find/list/get/set/ready, automatic choice, GPULITE_BACKEND, Interpreter."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import gpulite
from gpulite import runtime
from gpulite.backends.cpu import CpuBackend
from gpulite.environment import env
from tests.env.conftest import software_adapter, use_backend
from tests.webgpu.support import adapter_problem


class _Broken:
    """A factory that cannot start, like a GPU backend without a device."""

    def __call__(self, **kw):
        raise RuntimeError("no such device")


def test_list_backends_has_the_builtins_highest_priority_first():
    names = gpulite.list_backends()
    assert names.index("webgpu") < names.index("cpu")


def test_register_backend_twice_returns_false_and_warns(temp_backend, caplog):
    temp_backend("dup", lambda **kw: CpuBackend(**kw))
    with caplog.at_level(logging.WARNING):
        assert gpulite.register_backend("dup", lambda **kw: CpuBackend(**kw), 1) is False
    assert "already registered" in caplog.text


def test_register_backend_rejects_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        gpulite.register_backend("x", 42, 1)
    with pytest.raises(TypeError, match="priority must be an int"):
        gpulite.register_backend("x", lambda **kw: None, "high")


def test_set_backend_and_get_backend():
    assert gpulite.set_backend("cpu") is True
    assert gpulite.get_backend() == "cpu"
    assert gpulite.backend_choice() == "set_backend('cpu')"


def test_set_backend_returns_false_and_logs_why_when_the_backend_cannot_start(temp_backend, caplog):
    temp_backend("broken", _Broken(), 5)
    assert gpulite.set_backend("cpu")
    with caplog.at_level(logging.WARNING):
        assert gpulite.set_backend("broken") is False
    assert "no such device" in caplog.text and "broken" in caplog.text
    assert gpulite.get_backend() == "cpu"  # unchanged


def test_set_backend_of_an_unknown_name_raises_with_the_registered_names():
    with pytest.raises(gpulite.BackendNotFoundError, match=r"'nope'.*'cpu'"):
        gpulite.set_backend("nope")


def test_find_backend_starts_it_or_returns_none(temp_backend):
    assert isinstance(gpulite.find_backend("cpu"), CpuBackend)
    temp_backend("broken", _Broken())
    assert gpulite.find_backend("broken") is None


def test_remove_backend_unregisters_and_resets_the_active_choice(temp_backend):
    temp_backend("tmp", lambda **kw: CpuBackend(**kw), 1)
    gpulite.copy_kernels("cpu", "tmp")
    assert gpulite.set_backend("tmp")
    t = gpulite.tensor([1.0, 2.0])
    y = gpulite.ops.add(t, t)
    assert y.backend == "tmp"
    gpulite.remove_backend("tmp")
    assert t.is_disposed and y.is_disposed  # its tensors go with it, as in TF.js
    with pytest.raises(gpulite.DisposedTensorError, match="removal of its backend"):
        y.numpy()
    assert "tmp" not in gpulite.memory().backends
    assert "tmp" not in gpulite.list_backends()
    assert gpulite.get_backend() != "tmp"
    with pytest.raises(gpulite.BackendNotFoundError):
        gpulite.remove_backend("tmp")


def test_ready_starts_the_active_backend_and_names_it():
    assert gpulite.ready() == gpulite.get_backend()
    assert gpulite.find_backend(gpulite.get_backend()) is not None


def test_automatic_choice_takes_the_highest_priority_backend_that_starts(temp_backend):
    temp_backend("broken", _Broken(), 100)
    temp_backend("mine", lambda **kw: CpuBackend(**kw), 50)
    assert gpulite.get_backend() == "mine"
    why = gpulite.backend_choice()
    assert "'broken' (priority 100) cannot start: RuntimeError: no such device" in why


@pytest.mark.skipif(not software_adapter(), reason="the WebGPU adapter here is a hardware GPU (or absent)")
def test_auto_ranks_litert_then_cpu_over_a_software_webgpu_adapter_and_says_why():
    """No real GPU: LiteRT's kernels (ai-edge-litert is a test dependency) rank first, then numpy,
    then the software adapter; each rank comes with its reason."""
    assert gpulite.get_backend() == "litert"
    why = gpulite.backend_choice()
    assert why.startswith("auto: 'litert'")
    assert "'cpu' ranks 1 because numpy" in why
    assert "'webgpu' ranks 0" in why and "CPU type" in why
    info = {b.name: b for b in runtime.describe_backends()}
    assert info["webgpu"].priority == 3 and info["webgpu"].rank == 0
    assert info["litert"].rank == 2 and "XNNPACK" in info["litert"].note and info["cpu"].rank == 1


def test_gpulite_backend_environment_variable_overrides_the_automatic_choice(monkeypatch):
    monkeypatch.setenv("GPULITE_BACKEND", "cpu")
    runtime.reset_active()
    assert gpulite.get_backend() == "cpu"
    assert gpulite.backend_choice() == "GPULITE_BACKEND=cpu"
    if not adapter_problem():
        monkeypatch.setenv("GPULITE_BACKEND", "webgpu")
        runtime.reset_active()
        assert gpulite.get_backend() == "webgpu"


def test_gpulite_backend_naming_an_unknown_backend_raises(monkeypatch):
    monkeypatch.setenv("GPULITE_BACKEND", "nope")
    runtime.reset_active()
    with pytest.raises(gpulite.BackendNotFoundError, match="nope"):
        gpulite.get_backend()


def test_interpreter_default_stays_cpu_unless_a_backend_was_chosen_explicitly(temp_backend):
    model = _tiny_model()
    temp_backend("mine", lambda **kw: CpuBackend(**kw), 50)
    gpulite.copy_kernels("cpu", "mine")
    assert gpulite.Interpreter(model_content=model).backend == "cpu"  # tflite_runtime behaviour
    env().set("auto_measure", False)  # auto follows the ranking then (measured: tests/env/test_auto_measure.py)
    assert gpulite.Interpreter(model_content=model, backend="auto").backend == "mine"
    env().reset()
    assert gpulite.set_backend("mine")
    it = gpulite.Interpreter(model_content=model)
    assert it.backend == "mine"
    it.allocate_tensors()
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), x + x)


def test_interpreter_auto_follows_gpulite_backend(monkeypatch):
    monkeypatch.setenv("GPULITE_BACKEND", "cpu")
    runtime.reset_active()
    assert gpulite.Interpreter(model_content=_tiny_model(), backend="auto").backend == "cpu"
    assert gpulite.Interpreter(model_content=_tiny_model()).backend == "cpu"


def test_interpreter_unknown_backend_raises_a_value_error():
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        gpulite.Interpreter(model_content=_tiny_model(), backend="nope")


def test_webgpu_backend_starts_on_request_even_when_ranked_below_cpu():
    use_backend("webgpu")
    assert gpulite.get_backend() == "webgpu"
    assert gpulite.find_backend("webgpu").gdev is not None


def _tiny_model() -> bytes:
    from gpulite.testing.tflite_writer import ModelBuilder
    mb = ModelBuilder()
    x = mb.input("x", (1, 6), np.float32)
    y = mb.tensor("y", (1, 6), np.float32)
    mb.op("ADD", [x, x], [y])
    mb.output(y)
    return mb.build()
