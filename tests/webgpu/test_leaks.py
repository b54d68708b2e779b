"""No GPU object leaks: long invoke loops and many interpreters leave object counts unchanged.

Counts come from two independent places: wgpu-py's object tracker
(``wgpu.diagnostics.object_counts``: live Python-side GPU objects, buffer bytes) and
wgpu-native's registry report (``wgpu.diagnostics.wgpu_native_counts``: objects the native
library still keeps). The second catches leaks the first cannot see: a command buffer that
is finished but never submitted stays in wgpu-native's registry after its Python object is
gone (that is how an earlier device-loss probe leaked one entry per ``get_tensor``).

The 5,000-invoke loops use a one-node model: on lavapipe a zoo model takes ~25 ms per
invoke, so the zoo model (hand_recrop, the smallest) runs 200.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gpulite import Interpreter, zoo
from gpulite.errors import ModelError
from tests.compare import assert_same
from tests.webgpu.support import require_adapter
from tests.webgpu.tiny_models import chain, chain_ref, relu, x_of

require_adapter()

import wgpu  # noqa: E402
import wgpu.backends.wgpu_native  # noqa: E402  (registers the native counts)

pytestmark = pytest.mark.slow

SMALL = (1, 4, 4, 4)
# Everything gpulite creates per plan or per invoke, on both sides.
_PY = ("Buffer", "BindGroup", "ComputePipeline", "ShaderModule", "CommandEncoder", "CommandBuffer",
       "ComputePassEncoder", "BindGroupLayout", "PipelineLayout", "Device", "Queue")


def counts() -> dict[str, int]:
    gc.collect()  # wgpu-py objects hold reference cycles (device <-> queue): free them first
    py = wgpu.diagnostics.object_counts.get_dict()
    native = wgpu.diagnostics.wgpu_native_counts.get_dict()
    out = {f"py.{k}": py[k]["count"] for k in _PY}
    out["py.buffer_bytes"] = py["Buffer"].get("resource_mem", 0)
    out.update({f"native.{k}": v["count"] for k, v in native.items() if k != "total"})
    return out


def changed(before: dict[str, int], after: dict[str, int]) -> dict[str, tuple[int, int]]:
    return {k: (before[k], after[k]) for k in before if before[k] != after[k]}


def _io(it):
    return it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]


def test_5000_host_io_invokes_leak_nothing():
    it = Interpreter(model_content=relu(SMALL), backend="webgpu")
    it.allocate_tensors()
    i, o = _io(it)
    xs = [x_of(k, SMALL) for k in range(4)]
    for k in range(20):
        it.set_tensor(i, xs[k % 4])
        it.invoke()
        it.get_tensor(o)
    before = counts()
    for k in range(5000):
        it.set_tensor(i, xs[k % 4])
        it.invoke()
        out = it.get_tensor(o)
    assert_same(out, np.maximum(xs[4999 % 4], 0), rtol=0)
    assert changed(before, counts()) == {}
    assert it.transfer_stats()["invokes"] == 5020


def test_5000_gpu_io_invokes_leak_nothing():
    it = Interpreter(model_content=relu(SMALL), backend="webgpu", outputs_on_gpu=True)
    it.allocate_tensors()
    i, o = _io(it)
    dev = it._exe.gdev.device
    buf = dev.create_buffer_with_data(data=x_of(1, SMALL).tobytes(),
                                      usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    it.bind_input(i, buf)

    def step(k: int):
        it.invoke()
        t = it.get_output_gpu(o)
        if k % 500 == 0:  # the other GPU-side paths too: an owned copy, and a blocking readback
            t.copy().destroy()
            t.data_sync()
        return t

    for k in range(20):
        step(k)
    it._exe.wait()
    before = counts()
    for k in range(5000):
        t = step(k)
    assert_same(t.data_sync(), np.maximum(x_of(1, SMALL), 0), rtol=0)  # also waits for the queue
    del t
    assert changed(before, counts()) == {}


def test_200_zoo_invokes_leak_nothing():
    try:
        path = str(zoo.resolve("hand_recrop"))
    except ModelError as e:
        pytest.skip(f"hand_recrop not available: {e}")
    it = Interpreter(model_path=path, backend="webgpu")
    it.allocate_tensors()
    feeds = [(d["index"], np.random.default_rng(0).uniform(-1, 1, d["shape"]).astype(d["dtype"]))
             for d in it.get_input_details()]
    outs = [d["index"] for d in it.get_output_details()]

    def step():
        for idx, x in feeds:
            it.set_tensor(idx, x)
        it.invoke()
        return [it.get_tensor(k) for k in outs]

    first = step()
    before = counts()
    for _ in range(200):
        last = step()
    assert changed(before, counts()) == {}
    for a, b in zip(first, last, strict=True):
        assert_same(b, a, rtol=0)  # same input, same output: nothing stale or overwritten


@pytest.mark.parametrize("closing", ["close", "drop"])
def test_20_interpreters_return_counts_to_the_start(closing):
    def one(seed: int) -> None:
        it = Interpreter(model_content=chain(), backend="webgpu")
        i, o = _io(it)
        it.allocate_tensors()
        it.set_tensor(i, x_of(seed))
        it.invoke()
        assert_same(it.get_tensor(o), chain_ref(x_of(seed)), rtol=1e-5)
        t = it.get_output_gpu(o)
        t.data_sync()
        if closing == "close":
            it.close()  # ownership: close() releases ...
        # ... and with "drop" the garbage collector's safety net must do the same

    one(0)  # pipelines are cached per device, so the first interpreter's stay (by design)
    before = counts()
    for seed in range(1, 21):
        one(seed)
    assert changed(before, counts()) == {}


def test_close_releases_buffers_at_once():
    it = Interpreter(model_content=chain(), backend="webgpu")
    it.allocate_tensors()
    py = wgpu.diagnostics.object_counts.get_dict()["Buffer"]
    it.close()
    gc.collect()
    after = wgpu.diagnostics.object_counts.get_dict()["Buffer"]
    assert after["count"] == py["count"] - 3, "arena, uniforms and staging"
    assert after.get("resource_mem", 0) < py.get("resource_mem", 0)
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        it.invoke()
