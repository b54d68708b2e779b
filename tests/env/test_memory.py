"""tidy / keep / dispose / memory / profile / time, and the GPU buffer pool."""

from __future__ import annotations

import time

import numpy as np
import pytest

import gpulite
from gpulite import ops, runtime
from tests.env import models
from tests.env.conftest import use_backend

X = np.ones((4, 8), np.float32)


def test_tidy_disposes_everything_but_the_result(backend):
    before = gpulite.memory().num_tensors
    inside = []

    def fn():
        a = gpulite.tensor(X)
        b = ops.add(a, a)
        c = ops.mul(b, 3.0)  # the 3.0 becomes a tensor too, disposed as well
        inside.extend([a, b])
        return {"c": c, "pair": [b, 1]}
    out = gpulite.tidy(fn)
    assert not out["c"].is_disposed and not out["pair"][0].is_disposed
    assert inside[0].is_disposed
    np.testing.assert_array_equal(out["c"].numpy(), X * 6)
    assert gpulite.memory().num_tensors == before + 2
    gpulite.dispose(out)
    assert gpulite.memory().num_tensors == before


def test_tidy_as_a_context_manager_keeps_only_kept_tensors(backend):
    before = gpulite.memory()
    with gpulite.tidy():
        a = gpulite.tensor(X)
        b = gpulite.keep(ops.relu(a))
    assert a.is_disposed and not b.is_disposed
    with pytest.raises(gpulite.DisposedTensorError, match="disposed"):
        a.numpy()
    np.testing.assert_array_equal(b.numpy(), X)
    b.dispose()
    assert gpulite.memory().num_tensors == before.num_tensors


def test_nested_tidy_moves_results_outward(backend):
    with gpulite.tidy():
        inner = gpulite.tidy(lambda: ops.add(gpulite.tensor(X), 1.0))
        assert not inner.is_disposed
    assert inner.is_disposed  # the outer scope took it over


def test_keep_survives_every_enclosing_tidy(backend):
    with gpulite.tidy():
        with gpulite.tidy():
            k = gpulite.keep(gpulite.tensor(X))
    assert not k.is_disposed
    k.dispose()
    with pytest.raises(TypeError, match="gpulite Tensor"):
        gpulite.keep(X)


def test_tidy_disposes_on_error(backend):
    made = []

    def fail():
        made.append(gpulite.tensor(X))
        raise KeyError("boom")
    with pytest.raises(KeyError):
        gpulite.tidy(fail)
    assert made[0].is_disposed


def test_memory_counts_per_backend(backend):
    m0 = gpulite.memory()
    t = gpulite.tensor(np.ones((10, 10), np.float32))
    m1 = gpulite.memory()
    assert (m1.num_tensors - m0.num_tensors, m1.num_bytes - m0.num_bytes) == (1, 400)
    per = m1.backends[backend]
    assert per.num_tensors - m0.backends.get(backend, gpulite.engine.BackendMemory()).num_tensors == 1
    y = ops.relu(t)
    m2 = gpulite.memory()
    if backend == "webgpu":  # t was uploaded for the op and y stays on the GPU
        assert m2.num_bytes_on_gpu - m1.num_bytes_on_gpu == 800
        assert m2.num_bytes_allocated_on_gpu >= m2.num_bytes_on_gpu
        assert m2.backends["webgpu"].num_bytes_allocated_on_gpu > 0
    else:
        assert m2.num_bytes_on_gpu == m1.num_bytes_on_gpu
    gpulite.dispose([t, y])
    m3 = gpulite.memory()
    assert (m3.num_tensors, m3.num_bytes, m3.num_bytes_on_gpu) == (m0.num_tensors, m0.num_bytes, m0.num_bytes_on_gpu)
    if backend == "webgpu":  # the buffers went back to the pool, which still holds them
        assert m3.backends["webgpu"].num_bytes_in_pool >= 2 * 512


def test_garbage_collected_tensors_are_disposed(backend):
    before = gpulite.memory()
    ops.relu(gpulite.tensor(X)).numpy()  # nobody holds either tensor afterwards
    after = gpulite.memory()
    assert (after.num_tensors, after.num_bytes, after.num_bytes_on_gpu) == (
        before.num_tensors, before.num_bytes, before.num_bytes_on_gpu)


def _churn(n: int, every: int) -> None:
    small = np.ones(8, np.float32)
    for i in range(n):
        t = gpulite.tensor(small)
        if i % every == 0:
            ops.add(t, t)


@pytest.mark.parametrize(("n", "every"), [(100_000, 100)])
def test_100k_tensors_in_tidy_leave_memory_where_it_started(backend, n, every):
    # Warm-up: compiles the op and fills the pool (every tensor of a tidy lives to its end, so
    # the pool grows to the tidy's peak once); the measured run must then reuse all of it.
    gpulite.tidy(lambda: _churn(n, every))
    before = gpulite.memory()
    t0 = time.perf_counter()
    gpulite.tidy(lambda: _churn(n, every))
    elapsed = time.perf_counter() - t0
    assert gpulite.memory() == before
    assert elapsed < 30, f"{n} tensors took {elapsed:.1f} s"


def test_the_pool_reuses_buffers_across_shapes_of_one_size_class():
    use_backend("webgpu")
    from gpulite.backends.webgpu.pool import size_class
    assert [size_class(n) for n in (1, 256, 257, 320, 321, 1000, 1024, 1025, 5000)] == [
        256, 256, 320, 320, 384, 1024, 1024, 1280, 5120]
    pool = runtime.eager_executor().pool
    gpulite.tensor(np.ones(300, np.float32)).to_gpu().dispose()  # 1,200 bytes: the 1,280 class
    created = pool.created
    for n in range(300, 321):  # 21 shapes, 1,200..1,280 bytes: one class, one buffer
        t = gpulite.tensor(np.ones((1, n), np.float32)).to_gpu()
        np.testing.assert_array_equal(t.numpy(), np.ones((1, n), np.float32))
        t.dispose()
    assert pool.created == created


def test_profile_reports_kernels_time_peak_bytes_and_new_tensors(backend):
    x = gpulite.tensor(np.ones((16, 16), np.float32))

    def fn():
        a = ops.add(x, x)   # 1 KiB
        b = ops.matmul(a, a)
        a.dispose()
        return b
    p = gpulite.profile(fn)
    assert [k.name for k in p.kernels] == ["ADD", "BATCH_MATMUL"]
    assert all(k.backend == backend and k.time_ms > 0 for k in p.kernels)
    assert p.kernels[1].input_shapes == [(16, 16), (16, 16)] and p.kernels[1].output_shapes == [(16, 16)]
    assert p.new_tensors == 1 and p.new_bytes == 1024
    assert p.peak_bytes - gpulite.memory().num_bytes >= 1024  # a and b were alive together
    np.testing.assert_allclose(p.result.numpy(), np.full((16, 16), 64, np.float32))
    gpulite.dispose([x, p.result])


def test_profile_records_every_node_of_an_interpreter_invoke(backend):
    it = gpulite.Interpreter(model_content=models.clean(), backend=backend)
    it.allocate_tensors()
    x = models.x_of()
    p = gpulite.profile(lambda: models.run(it, x))
    assert [k.name for k in p.kernels] == [f"{op}#{i}" for op, i in models.nodes_run(it)]
    assert p.kernels[-1].name == ("ADD#1" if backend == "webgpu" else "LOGISTIC#2")  # webgpu: in ADD's epilogue
    assert all(k.time_ms > 0 and k.bytes_added == 512 for k in p.kernels)
    np.testing.assert_allclose(p.result, models.clean_ref(x), rtol=1e-6)
    assert gpulite.profile(lambda: None).kernels == []


def test_time(backend):
    x = gpulite.tensor(np.ones((64, 64), np.float32))
    info = gpulite.time(lambda: ops.relu(ops.matmul(x, x)))
    assert info.kernels == 2
    assert 0 < info.kernel_ms <= info.wall_ms
