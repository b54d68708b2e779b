"""GPU-resident I/O: get_output_gpu / GpuTensor, bind_input, outputs_on_gpu, transfer counting."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from gpulite import DeviceMismatchError, Interpreter, StaleTensorError
from tests.compare import assert_same
from tests.webgpu.support import require_adapter
from tests.webgpu.tiny_models import SHAPE, chain, chain_ref, two_outputs, x_of

require_adapter()

import wgpu  # noqa: E402  (only worth importing with an adapter)

from gpulite.backends.webgpu.gpu_tensor import GpuTensor  # noqa: E402

NBYTES = int(np.prod(SHAPE)) * 4
IN_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def _own_device():
    return wgpu.gpu.request_adapter_sync(power_preference="high-performance").request_device_sync(label="app")


def _ready(model: bytes | None = None, **opts) -> Interpreter:
    it = Interpreter(model_content=model or chain(), backend="webgpu", **opts)
    it.allocate_tensors()
    return it


def _in(it):
    return it.get_input_details()[0]["index"]


def _out(it, k: int = 0):
    return it.get_output_details()[k]["index"]


def _buffer_with(device, x: np.ndarray, *, usage=IN_USAGE, pad: int = 0):
    return device.create_buffer_with_data(data=bytes(pad) + x.tobytes(), usage=usage)


class Transfers:
    """Counts every host<->GPU movement independently of gpulite's own counters.

    Uploads: the device queue's ``write_buffer``/``create_buffer_with_data``; readbacks:
    every buffer map (``map_sync``/``map_async``) and ``queue.read_buffer``.
    """

    def __init__(self, monkeypatch, gdev):
        self.writes, self.maps = [], []
        real = gdev.queue
        outer = self

        class CountingQueue:
            def __getattr__(self, name):
                return getattr(real, name)

            def write_buffer(self, buf, off, data, *a, **k):
                outer.writes.append(memoryview(data).nbytes)
                return real.write_buffer(buf, off, data, *a, **k)

            def read_buffer(self, *a, **k):
                outer.maps.append("read_buffer")
                return real.read_buffer(*a, **k)

        monkeypatch.setattr(gdev, "queue", CountingQueue())
        cls = type(gdev.device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_DST))
        for name in ("map_sync", "map_async"):
            orig = getattr(cls, name)

            def counted(buf, *a, _orig=orig, _name=name, **k):
                outer.maps.append(_name)
                return _orig(buf, *a, **k)

            monkeypatch.setattr(cls, name, counted)


# -- get_output_gpu ---------------------------------------------------------------------
def test_get_output_gpu_describes_the_output_without_reading_back():
    it = _ready()
    it.set_tensor(_in(it), x_of(1))
    it.invoke()
    before = it.transfer_stats()["bytes_read_back"]
    t = it.get_output_gpu(_out(it))
    assert isinstance(t, GpuTensor) and t.valid
    assert (t.shape, t.dtype, t.nbytes, t.layout) == (SHAPE, np.dtype(np.float32), NBYTES, "NHWC")
    assert t.offset == it.memory_plan.offsets[_out(it)] and t.offset % 64 == 0
    assert isinstance(t.buffer, wgpu.GPUBuffer) and t.offset + t.nbytes <= t.buffer.size
    assert it.transfer_stats()["bytes_read_back"] == before, "get_output_gpu itself reads nothing back"
    assert_same(t.data_sync(), chain_ref(x_of(1)), rtol=1e-5)
    assert it.transfer_stats()["bytes_read_back"] == before + NBYTES


def test_data_is_awaitable_and_uses_the_async_map(monkeypatch):
    it = _ready(two_outputs())
    x = x_of(2)
    it.set_tensor(_in(it), x)
    it.invoke()
    r, q = it.get_output_gpu(_out(it, 0)), it.get_output_gpu(_out(it, 1))
    cls = type(r.buffer)

    def no_sync_map(*a, **k):
        raise AssertionError("data() must not block on map_sync")

    monkeypatch.setattr(cls, "map_sync", no_sync_map)

    async def main():
        return await asyncio.gather(r.data(), q.data())

    rv, qv = asyncio.run(main())  # two readbacks in flight at once, each with its own staging buffer
    assert_same(rv, np.maximum(x, 0), rtol=0)
    assert_same(qv, x * x, rtol=1e-6)


def test_copy_is_owned_by_the_caller_and_outlives_the_next_invoke():
    it = _ready()
    it.set_tensor(_in(it), x_of(3))
    it.invoke()
    t = it.get_output_gpu(_out(it))
    kept = t.copy(usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.STORAGE)
    assert kept is not t.buffer and kept.size == NBYTES
    it.set_tensor(_in(it), x_of(4))
    it.invoke()
    gdev = it._exe.gdev
    got = np.frombuffer(gdev.device.queue.read_buffer(kept), np.float32).reshape(SHAPE)
    assert_same(got, chain_ref(x_of(3)), rtol=1e-5)
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(4)), rtol=1e-5)
    it.close()
    del it
    got = np.frombuffer(gdev.device.queue.read_buffer(kept), np.float32).reshape(SHAPE)
    assert_same(got, chain_ref(x_of(3)), rtol=1e-5)  # the caller's buffer outlives the interpreter
    kept.destroy()


def test_handle_goes_stale_at_the_next_invoke_and_at_close():
    it = _ready()
    it.set_tensor(_in(it), x_of(5))
    it.invoke()
    t = it.get_output_gpu(_out(it))
    it.invoke()
    assert not t.valid
    for use in (lambda: t.buffer, t.data_sync, t.copy, lambda: asyncio.run(t.data())):
        with pytest.raises(StaleTensorError, match="1 more invoke"):
            use()
    t2 = it.get_output_gpu(_out(it))
    it.close()
    with pytest.raises(StaleTensorError, match="closed"):
        t2.data_sync()


def test_get_output_gpu_rejects_non_outputs_and_the_cpu_backend():
    it = _ready()
    with pytest.raises(ValueError, match=r"not an output.*\[" + str(_out(it)) + r"\]"):
        it.get_output_gpu(_in(it))
    cpu = Interpreter(model_content=chain())
    cpu.allocate_tensors()
    with pytest.raises(RuntimeError, match="needs backend='webgpu'"):
        cpu.get_output_gpu(_out(cpu))


def test_output_made_on_the_cpu_is_uploaded_on_demand():
    it = _ready(cpu_ops=["MUL"])  # the graph output is made by a CPU kernel
    it.set_tensor(_in(it), x_of(6))
    it.invoke()
    up = it.transfer_stats()["bytes_uploaded"]
    t = it.get_output_gpu(_out(it))
    assert it.transfer_stats()["bytes_uploaded"] == up + NBYTES
    assert_same(t.data_sync(), chain_ref(x_of(6)), rtol=1e-5)
    it.get_output_gpu(_out(it))
    assert it.transfer_stats()["bytes_uploaded"] == up + NBYTES, "uploaded once per invoke"


# -- bind_input -----------------------------------------------------------------------------
def test_bound_input_is_copied_on_the_gpu_each_invoke():
    it = _ready()
    dev = it._exe.gdev.device
    buf = _buffer_with(dev, x_of(7), pad=256)
    it.bind_input(_in(it), buf, offset=256)
    it.invoke()
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(7)), rtol=1e-5)
    dev.queue.write_buffer(buf, 256, x_of(8))  # the application updates its buffer on the GPU
    it.invoke()
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(8)), rtol=1e-5)
    assert_same(it.get_tensor(_in(it)), x_of(8), rtol=0)  # the input reads back from the buffer
    it.set_tensor(_in(it), x_of(9))  # set_tensor replaces the binding
    it.invoke()
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(9)), rtol=1e-5)
    assert it.get_plan()["bound_inputs"] == []
    it.bind_input(_in(it), buf, offset=256)
    assert it.get_plan()["bound_inputs"] == [_in(it)]
    it.invoke()
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(8)), rtol=1e-5)
    it.bind_input(_in(it), None)  # unbinding falls back to the last value set on the host
    it.invoke()
    assert_same(it.get_tensor(_in(it)), x_of(9), rtol=0)
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(9)), rtol=1e-5)


def test_bound_input_read_by_a_cpu_kernel():
    it = _ready(cpu_ops=["ADD"])  # the first node, reading x, runs on the CPU
    buf = _buffer_with(it._exe.gdev.device, x_of(10))
    it.bind_input(_in(it), buf)
    it.invoke()
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(10)), rtol=1e-5)
    plan = it.get_plan()
    assert plan["bytes_uploaded_per_invoke"] == NBYTES  # ADD's output crosses up; x is never uploaded


def test_bind_input_validates_the_buffer():
    it = _ready()
    dev, i = it._exe.gdev.device, _in(it)
    x = x_of(11)
    with pytest.raises(ValueError, match="lacks COPY_SRC"):
        it.bind_input(i, _buffer_with(dev, x, usage=wgpu.BufferUsage.STORAGE))
    with pytest.raises(ValueError, match="multiple of 4"):
        it.bind_input(i, _buffer_with(dev, x, pad=8), offset=2)
    with pytest.raises(ValueError, match=f"needs {NBYTES} bytes .* from offset 4, but the buffer holds {NBYTES}"):
        it.bind_input(i, _buffer_with(dev, x), offset=4)
    with pytest.raises(ValueError, match="layout 'PHWC4' is not supported"):
        it.bind_input(i, _buffer_with(dev, x), layout="PHWC4")
    with pytest.raises(ValueError, match="not a graph input"):
        it.bind_input(_out(it), _buffer_with(dev, x))
    with pytest.raises(TypeError, match=r"wgpu\.GPUBuffer"):
        it.bind_input(i, x)
    assert it.get_plan()["bound_inputs"] == [], "a rejected binding leaves nothing bound"


def test_buffer_of_another_device_raises_device_mismatch_naming_both():
    it = _ready()
    other = _own_device()
    buf = _buffer_with(other, x_of(12))
    with pytest.raises(DeviceMismatchError) as e:
        it.bind_input(_in(it), buf)
    msg = str(e.value)
    assert f"#{other.uid}" in msg and f"#{it._exe.gdev.device.uid}" in msg and "'app'" in msg


# -- outputs_on_gpu and counting ------------------------------------------------------------
def test_outputs_on_gpu_skips_readback_and_reads_on_demand():
    it = _ready(outputs_on_gpu=True)
    it.set_tensor(_in(it), x_of(13))
    it.invoke()
    assert it.transfer_stats()["bytes_read_back"] == 0
    assert it.get_plan()["bytes_read_back_per_invoke"] == 0
    view = it.tensor(_out(it))
    assert not np.array_equal(view(), chain_ref(x_of(13))), "the host copy is not kept current"
    it.ensure_readable(_out(it))
    assert_same(view(), chain_ref(x_of(13)), rtol=1e-5)
    it.ensure_readable(_out(it))  # already readable: no second readback
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(13)), rtol=1e-5)
    assert it.transfer_stats()["bytes_read_back"] == NBYTES
    it.set_tensor(_in(it), x_of(14))
    it.invoke()  # the next invoke makes the host copy stale again, and get_tensor notices
    assert_same(it.get_tensor(_out(it)), chain_ref(x_of(14)), rtol=1e-5)


def test_bound_input_and_gpu_outputs_move_zero_bytes(monkeypatch):
    it = _ready(outputs_on_gpu=True)
    gdev = it._exe.gdev
    buf = _buffer_with(gdev.device, x_of(15))
    it.bind_input(_in(it), buf)
    plan = it.get_plan()
    assert plan["bytes_uploaded_per_invoke"] == 0 and plan["bytes_read_back_per_invoke"] == 0
    it.invoke()  # first invoke outside the count: nothing special, but keeps the test about steady state
    before = it.transfer_stats()
    spy = Transfers(monkeypatch, gdev)
    for _ in range(3):
        it.invoke()
        t = it.get_output_gpu(_out(it))
    after = it.transfer_stats()
    assert after["invokes"] == before["invokes"] + 3
    assert (after["bytes_uploaded"], after["bytes_read_back"]) == (before["bytes_uploaded"], before["bytes_read_back"])
    assert spy.writes == [] and spy.maps == [], f"uploads {spy.writes}, maps {spy.maps}"
    assert_same(t.data_sync(), chain_ref(x_of(15)), rtol=1e-5)  # and the numbers are right
    assert spy.maps[0] == "map_sync"  # (wgpu-py's map_sync goes through map_async)
    assert it.transfer_stats()["bytes_read_back"] == before["bytes_read_back"] + NBYTES


def test_default_invoke_counts_what_it_moves():
    it = _ready()
    base = it.transfer_stats()
    assert base["bytes_uploaded"] == base["constant_bytes"] > 0 and base["bytes_read_back"] == 0
    it.set_tensor(_in(it), x_of(16))
    it.invoke()
    s = it.transfer_stats()
    assert (s["bytes_uploaded"] - base["bytes_uploaded"], s["bytes_read_back"], s["invokes"]) == (NBYTES, NBYTES, 1)
    assert it.get_plan()["transfers"] == s
