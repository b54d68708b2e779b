"""gpulite.env(): typed flags, GPULITE_* variables, and debug / check_nans / prod wired into both backends."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

import gpulite
from gpulite import ops
from gpulite.environment import FLAGS, env
from tests.env import models
from tests.env.conftest import use_backend

ALL_FLAGS = ["precision", "debug", "prod", "check_nans", "pipeline_cache_dir", "cpu_jit", "num_threads"]


def test_defaults():
    assert env().flags() == {"precision": "fp32", "debug": False, "prod": False, "check_nans": False,
                             "pipeline_cache_dir": None, "cpu_jit": True, "num_threads": None,
                             "auto_measure": True, "webgpu_encode": "native", "webgpu_quantized": "float"}
    assert all(env().source(n) == "default" for n in ALL_FLAGS)


@pytest.mark.parametrize(("name", "value"), [
    ("precision", "fp16"), ("debug", True), ("prod", True), ("check_nans", True),
    ("pipeline_cache_dir", "/tmp/gpulite-pipelines"), ("cpu_jit", False), ("num_threads", 3),
])
def test_set_get_reset(name, value):
    env().set(name, value)
    assert env().get(name) == value and env().source(name) == "set"
    env().reset()
    assert env().get(name) == FLAGS[name].default


def test_pipeline_cache_dir_takes_a_path():
    env().set("pipeline_cache_dir", Path("/tmp/x"))
    assert env().get("pipeline_cache_dir") == "/tmp/x"


@pytest.mark.parametrize(("var", "text", "name", "value"), [
    ("GPULITE_DEBUG", "1", "debug", True), ("GPULITE_DEBUG", "off", "debug", False),
    ("GPULITE_PROD", "true", "prod", True), ("GPULITE_CHECK_NANS", "yes", "check_nans", True),
    ("GPULITE_PRECISION", "fp16", "precision", "fp16"), ("GPULITE_NUM_THREADS", "4", "num_threads", 4),
    ("GPULITE_PIPELINE_CACHE_DIR", "/tmp/p", "pipeline_cache_dir", "/tmp/p"),
    ("GPULITE_CPU_JIT", "0", "cpu_jit", False),
])
def test_environment_variables(monkeypatch, var, text, name, value):
    monkeypatch.setenv(var, text)
    env().reset()
    assert env().get(name) == value and env().source(name) == var
    env().set(name, FLAGS[name].default)  # set() wins over the variable
    assert env().get(name) == FLAGS[name].default


def test_a_bad_environment_variable_raises_naming_it(monkeypatch):
    monkeypatch.setenv("GPULITE_NUM_THREADS", "many")
    env().reset()
    with pytest.raises(gpulite.FlagError, match=r"GPULITE_NUM_THREADS='many' is not a valid int"):
        env().get("num_threads")
    monkeypatch.delenv("GPULITE_NUM_THREADS")
    env().reset()


def _lists_every_flag(msg: str) -> bool:
    return all(re.search(rf"\b{n} \(", msg) for n in ALL_FLAGS)


@pytest.mark.parametrize("call", [lambda: env().get("nope"), lambda: env().set("nope", 1), lambda: env().get(3)])
def test_unknown_flag_raises_with_the_valid_flags(call):
    with pytest.raises(gpulite.FlagError, match="unknown flag") as e:
        call()
    assert _lists_every_flag(str(e.value))


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("debug", "yes", "expected a bool"), ("debug", 1, "expected a bool"), ("precision", "fp64", "'fp32' or 'fp16'"),
    ("precision", 16, "expected a str"), ("num_threads", 0, "int >= 1"), ("num_threads", 2.5, "int >= 1"),
    ("num_threads", True, "int >= 1"), ("pipeline_cache_dir", 7, "a path"),
])
def test_wrong_type_raises_with_what_was_expected_and_the_valid_flags(name, value, expected):
    with pytest.raises(gpulite.FlagError, match=re.escape(expected)) as e:
        env().set(name, value)
    assert _lists_every_flag(str(e.value))
    assert env().get(name) == FLAGS[name].default


def test_enable_debug_and_prod_mode():
    gpulite.enable_debug_mode()
    assert env().get("debug") and not env().get("prod")
    gpulite.enable_prod_mode()
    assert env().get("prod") and not env().get("debug")


def test_precision_and_num_threads_flags_reach_new_interpreters():
    env().set("num_threads", 3)
    assert gpulite.Interpreter(model_content=models.clean(), backend="cpu")._backend.num_threads == 3
    assert gpulite.Interpreter(model_content=models.clean(), backend="cpu", num_threads=2)._backend.num_threads == 2


def test_precision_flag_is_the_webgpu_default():
    use_backend("webgpu")
    env().set("precision", "fp16")
    it = gpulite.Interpreter(model_content=models.clean(), backend="webgpu")
    assert it._backend.precision_requested == "fp16"
    assert gpulite.Interpreter(model_content=models.clean(), backend="webgpu",
                               precision="fp32")._backend.precision_requested == "fp32"


# -- debug -----------------------------------------------------------------------------------
def _debug_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gpulite.debug"]


def test_debug_logs_every_model_kernel_with_shapes_time_and_bytes(backend, caplog):
    it = gpulite.Interpreter(model_content=models.clean(), backend=backend)
    x = models.x_of()
    env().set("debug", True)
    with caplog.at_level(logging.INFO, logger="gpulite.debug"):
        y = models.run(it, x)
    np.testing.assert_allclose(y, models.clean_ref(x), rtol=1e-6)
    lines = _debug_lines(caplog)
    ran = models.nodes_run(it)
    last = "ADD" if backend == "webgpu" else "LOGISTIC"  # webgpu runs the LOGISTIC in the ADD's epilogue
    assert [(line.split()[2], int(line.split()[1])) for line in lines] == ran and ran[-1][0] == last
    for line in lines:
        assert "-> [(1, 4, 4, 8)]" in line and re.search(r"\d+\.\d{3} ms", line) and "512 B out" in line
    env().set("debug", False)  # read at every invoke: off again without a new allocate_tensors
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="gpulite.debug"):
        np.testing.assert_allclose(models.run(it, x), models.clean_ref(x), rtol=1e-6)
    assert _debug_lines(caplog) == []


def test_debug_on_webgpu_with_nodes_on_both_sides(caplog):
    use_backend("webgpu")
    it = gpulite.Interpreter(model_content=models.clean(), backend="webgpu", cpu_ops=["ADD"])
    env().set("debug", True)
    x = models.x_of(1)
    with caplog.at_level(logging.INFO, logger="gpulite.debug"):
        y = models.run(it, x)
    np.testing.assert_allclose(y, models.clean_ref(x), rtol=1e-6)
    assert [line.split()[2] for line in _debug_lines(caplog)] == ["MUL", "ADD", "LOGISTIC"]
    assert len(it.get_plan()["partitions"]) == 3  # the probed plan is swapped out again


def test_debug_logs_eager_ops(backend, caplog):
    env().set("debug", True)
    with caplog.at_level(logging.INFO, logger="gpulite.debug"), gpulite.tidy():
        ops.relu(gpulite.tensor(np.ones((2, 3), np.float32)))
    (line,) = _debug_lines(caplog)
    assert line.startswith("RELU") and backend in line and "[(2, 3)] -> (2, 3) float32" in line and "ms" in line


# -- check_nans / prod -----------------------------------------------------------------------
NAN_WARNING = "ignore:invalid value encountered:RuntimeWarning"  # numpy's 0/0, made on purpose


@pytest.mark.filterwarnings(NAN_WARNING)
def test_check_nans_names_the_first_node_that_made_nan(backend):
    it = gpulite.Interpreter(model_content=models.chain(), backend=backend)
    x = models.x_of()
    assert np.isnan(models.run(it, x)).all()  # off by default: NaN flows through silently
    env().set("check_nans", True)
    with pytest.raises(gpulite.NaNError, match=r"node 1 \(DIV\) produced NaN in output tensor"):
        models.run(it, x)
    env().set("prod", True)  # prod skips the check
    assert np.isnan(models.run(it, x)).all()


@pytest.mark.filterwarnings(NAN_WARNING)
def test_check_nans_on_eager_ops(backend):
    env().set("check_nans", True)
    zeros = gpulite.tensor(np.zeros(4, np.float32))
    with pytest.raises(gpulite.NaNError, match=r"DIV on .* produced NaN"):
        ops.div(zeros, zeros)
    np.testing.assert_array_equal(ops.add(zeros, 1.0).numpy(), np.ones(4, np.float32))
    gpulite.enable_prod_mode()
    assert np.isnan(ops.div(zeros, zeros).numpy()).all()


def test_prod_skips_eager_argument_validation(backend):
    a, b = gpulite.tensor(np.ones(3, np.float32)), gpulite.tensor(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="one dtype"):
        ops.add(a, b)
    gpulite.enable_prod_mode()
    with pytest.raises(Exception) as e:  # the check is skipped; the kernel or graph rejects it instead
        ops.add(a, b)
    assert "one dtype" not in str(e.value)
