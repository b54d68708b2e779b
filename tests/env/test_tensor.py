"""Eager tensors: creation, data access (sync, async, DLPack), GPU placement, dispose."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import gpulite
from gpulite import ops, runtime
from tests.env.conftest import use_backend

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7


@pytest.mark.parametrize(("values", "dtype"), [
    ([1.5, 2.0], np.float32), ([1, 2], np.int32), ([True, False], np.bool_), (3.0, np.float32),
    (np.arange(3, dtype=np.float64), np.float32), (np.arange(3, dtype=np.int64), np.int64), ([7, -7], np.int32),
    (np.arange(3, dtype=np.uint8), np.uint8), (np.arange(3, dtype=np.int32), np.int32),
])
def test_tensor_dtypes_follow_tfjs(values, dtype):
    t = gpulite.tensor(values)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(values).astype(dtype))


def test_tensor_takes_an_explicit_dtype_and_rejects_unsupported_ones():
    assert gpulite.tensor([1, 2], dtype=np.float16).dtype == np.float16
    assert gpulite.tensor([1, 2], dtype="int64").dtype == np.int64
    with pytest.raises(TypeError, match="complex128 is not supported; expected one of"):
        gpulite.tensor([1, 2], dtype=np.complex128)
    with pytest.raises(ValueError, match="do not fit int32"):
        gpulite.tensor([2**40])
    with pytest.raises(TypeError, match="numbers or booleans"):
        gpulite.tensor(["a", "b"])


def test_tensor_copies_its_input():
    src = X.copy()
    t = gpulite.tensor(src)
    src[...] = -1
    np.testing.assert_array_equal(t.numpy(), X)
    with pytest.raises(ValueError, match="read-only"):
        t.numpy()[0, 0, 0] = 5


def test_shape_dtype_backend(backend):
    t = gpulite.tensor(X)
    assert (t.shape, t.dtype, t.backend, t.size, t.ndim, len(t)) == ((2, 3, 4), np.float32, backend, 24, 3, 2)
    assert t.nbytes == X.nbytes and isinstance(t.id, int)


def test_data_sync_numpy_array_and_await_data(backend):
    t = ops.mul(gpulite.tensor(X), 2.0)
    np.testing.assert_array_equal(asyncio.run(t.data()), X * 2)
    np.testing.assert_array_equal(t.data_sync(), X * 2)
    np.testing.assert_array_equal(t.numpy(), X * 2)
    assert t.array() == (X * 2).tolist()
    assert gpulite.tensor(4.0).array() == 4.0


def test_await_data_reads_back_a_gpu_result_without_blocking():
    use_backend("webgpu")
    t = ops.add(gpulite.tensor(X), 1.0)
    assert t.on_gpu

    async def main():
        other = asyncio.create_task(asyncio.sleep(0, result="ran"))
        values = await t.data()
        return values, await other
    values, other = asyncio.run(main())
    np.testing.assert_array_equal(values, X + 1)
    assert other == "ran"


def test_array_protocol(backend):
    t = ops.add(gpulite.tensor(X), 0.5)
    np.testing.assert_array_equal(np.asarray(t), X + 0.5)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    c = np.array(t, copy=True)
    c[0, 0, 0] = 99  # a real copy is writable
    assert t.numpy()[0, 0, 0] == X[0, 0, 0] + 0.5


def test_dlpack_of_host_data(backend):
    t = ops.add(gpulite.tensor(X), 1.0)
    t.data_sync()  # host data now exists on either backend
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    np.testing.assert_array_equal(np.from_dlpack(t), X + 1)


def test_dlpack_of_gpu_only_data_names_the_fix():
    use_backend("webgpu")
    t = ops.add(gpulite.tensor(X), 1.0)
    assert t.__dlpack_device__() == (15, 0)  # kDLWebGPU
    with pytest.raises(BufferError, match="data_sync"):
        np.from_dlpack(t)


def test_numpy_tensor_is_uploaded_on_first_gpu_use_not_before():
    use_backend("webgpu")
    exe = runtime.eager_executor()
    before = exe.uploads
    t = gpulite.tensor(X)
    assert t.backend == "webgpu" and not t.on_gpu and exe.uploads == before
    y = ops.relu(t)
    assert t.on_gpu and exe.uploads == before + 1
    ops.relu(t)
    assert exe.uploads == before + 1  # uploaded once
    y.dispose()


def test_op_outputs_stay_on_the_gpu_until_read():
    use_backend("webgpu")
    exe = runtime.eager_executor()
    t = gpulite.tensor(X)
    reads = exe.readbacks
    y = ops.mul(ops.add(t, 1.0), 3.0)
    assert y.on_gpu and exe.readbacks == reads
    np.testing.assert_allclose(y.numpy(), (X + 1) * 3, rtol=1e-6)
    assert exe.readbacks == reads + 1
    y.numpy()
    assert exe.readbacks == reads + 1  # the host copy is kept: tensors are immutable


def test_to_gpu_uploads_now_and_exposes_the_buffer():
    use_backend("cpu")
    from tests.webgpu.support import adapter_problem
    if adapter_problem():
        pytest.skip(adapter_problem())
    t = gpulite.tensor(X)
    assert not t.on_gpu and t.gpu_buffer is None
    before = gpulite.memory().num_bytes_on_gpu
    assert t.to_gpu() is t
    assert t.on_gpu and t.backend == "webgpu"
    buf = t.gpu_buffer
    assert buf.size >= X.nbytes
    assert gpulite.memory().num_bytes_on_gpu == before + X.nbytes
    np.testing.assert_array_equal(t.numpy(), X)


def test_a_disposed_tensor_raises_on_every_use(backend):
    t = gpulite.tensor(X)
    t.dispose()
    t.dispose()  # idempotent
    assert t.is_disposed and t.shape == (2, 3, 4)
    for use in (t.data_sync, t.numpy, t.array, lambda: asyncio.run(t.data()), lambda: ops.relu(t),
                lambda: np.asarray(t), t.to_gpu, lambda: np.from_dlpack(t), lambda: gpulite.keep(t)):
        with pytest.raises(gpulite.DisposedTensorError, match=f"id={t.id}|already disposed"):
            use()


def test_operators(backend):
    a, b = gpulite.tensor(X + 0.5), gpulite.tensor(X + 1)
    np.testing.assert_allclose((a + b).numpy(), X + 0.5 + X + 1)
    np.testing.assert_allclose((a - 1.0).numpy(), X + 0.5 - 1)
    np.testing.assert_allclose((2.0 * a).numpy(), 2 * (X + 0.5))
    np.testing.assert_allclose((b / a.reshape(2, 3, 4)).numpy(), (X + 1) / (X + 0.5), rtol=1e-6)
    np.testing.assert_allclose((1.0 - a).numpy(), 1 - (X + 0.5))
    m = gpulite.tensor(X[0])
    np.testing.assert_allclose((m @ m.transpose()).numpy(), X[0] @ X[0].T, rtol=1e-5)
