"""Eager tensors, TF.js style: ``gpulite.tensor(x)``, ``await t.data()``, ``t.dispose()``.

A :class:`Tensor` is immutable. Its data lives on the host (a read-only numpy array), on a
GPU (a pooled ``wgpu.GPUBuffer`` of a GPU backend's eager executor), or both: a tensor made
from numpy is uploaded on its first GPU use, not before; an op's output on a GPU backend
stays there until ``data()``/``data_sync()``/``numpy()`` reads it back (then the host copy is
kept too). ``t.backend`` is the backend the tensor belongs to: the active one when it was
made, or the GPU backend its data last moved to.

This module is a leaf (TF.js's ``tensor.ts``): it imports nothing of gpulite's runtime. The
runtime (:mod:`gpulite.runtime`) installs the :class:`TensorTracker` that counts tensors and
knows the backends (:func:`set_tensor_tracker`), and :mod:`gpulite.ops` installs the
:class:`OpHandler` behind ``t + u``, ``t @ u``, ``t.reshape`` (:func:`set_op_handler`).
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Protocol

import numpy as np

from gpulite.errors import DisposedTensorError

log = logging.getLogger(__name__)

DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float16, np.int32, np.int64, np.int16, np.int8, np.uint8,
                                     np.bool_))
_ids = itertools.count(1)
_KDLCPU, _KDLWEBGPU = 1, 15  # DLPack device types


class DeviceStore(Protocol):
    """What a tensor needs of the GPU eager executor holding its data (see ``backends.base.EagerExecutor``)."""

    name: str
    closed: bool

    def upload(self, array: np.ndarray) -> Any: ...

    def read(self, buf: Any, nbytes: int) -> np.ndarray: ...

    async def read_async(self, buf: Any, nbytes: int) -> np.ndarray: ...

    def release(self, buf: Any) -> None: ...

    def flush(self) -> None: ...


class TensorTracker(Protocol):
    """Counts tensors and knows the backends; installed by :mod:`gpulite.runtime`."""

    def track(self, t: Tensor) -> None: ...

    def untrack(self, t: Tensor) -> None: ...

    def gpu_changed(self, t: Tensor, on_gpu: bool) -> None: ...

    def moved(self, t: Tensor, new_home: str) -> None: ...

    def forget_weight(self, tensor_id: int) -> None: ...

    def active_backend(self) -> str: ...

    def gpu_store(self, backend: str | None) -> DeviceStore: ...


class OpHandler(Protocol):
    """The ops behind Tensor's operators; installed by :mod:`gpulite.ops`."""

    def add(self, a: Any, b: Any) -> Tensor: ...

    def sub(self, a: Any, b: Any) -> Tensor: ...

    def mul(self, a: Any, b: Any) -> Tensor: ...

    def div(self, a: Any, b: Any) -> Tensor: ...

    def matmul(self, a: Any, b: Any) -> Tensor: ...

    def reshape(self, x: Any, shape: Any) -> Tensor: ...

    def transpose(self, x: Any, perm: Any = None) -> Tensor: ...


class _Missing:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("gpulite's runtime is not loaded: import gpulite (not gpulite.tensor alone)")


_tracker: TensorTracker = _Missing()  # type: ignore[assignment]
_ops: OpHandler = _Missing()  # type: ignore[assignment]


def set_tensor_tracker(tracker: TensorTracker) -> None:
    """Install the runtime's tracker (TF.js ``setTensorTracker``)."""
    global _tracker
    _tracker = tracker


def set_op_handler(handler: OpHandler) -> None:
    """Install the ops behind Tensor's operators (TF.js ``setOpHandler``)."""
    global _ops
    _ops = handler


def _check_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype {dtype!r} is not a numpy dtype; expected one of {[str(d) for d in DTYPES]}") from None
    if dt not in DTYPES:
        raise TypeError(f"dtype {dt} is not supported; expected one of {[str(d) for d in DTYPES]}")
    return dt


def _default_dtype(arr: np.ndarray) -> np.dtype:
    # TF.js: JS numbers become float32, integers int32, booleans bool.
    kind = arr.dtype.kind
    if kind == "f":
        return np.dtype(np.float32)
    if kind in "iu":
        if arr.size and (arr.min() < np.iinfo(np.int32).min or arr.max() > np.iinfo(np.int32).max):
            raise ValueError(f"integer values {arr.min()}..{arr.max()} do not fit int32 (the default integer "
                             "dtype); pass dtype=np.int64")
        return np.dtype(np.int32)
    if kind == "b":
        return np.dtype(np.bool_)
    raise TypeError(f"cannot make a tensor of {arr.dtype} data; expected numbers or booleans")


class Tensor:
    """An immutable n-d array on a backend; make one with :func:`tensor`.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
    backend : str
        The backend it belongs to (see the module docstring).
    id : int
        Unique for the process, never reused.
    """

    __slots__ = ("__weakref__", "_buf", "_disposed", "_exe", "_home", "_host", "_kept", "_used_as_weight",
                 "dtype", "id", "nbytes", "shape")

    def __init__(self, *, shape: tuple[int, ...], dtype: np.dtype, home: str, host: np.ndarray | None = None,
                 buf: Any = None, exe: DeviceStore | None = None) -> None:
        self.shape, self.dtype, self.id = shape, dtype, next(_ids)
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self._home, self._host, self._buf, self._exe = home, host, buf, exe
        self._disposed = self._kept = self._used_as_weight = False
        _tracker.track(self)
        if buf is not None:
            _tracker.gpu_changed(self, True)

    # -- facts ------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        return self._home

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    rank = ndim

    @property
    def on_gpu(self) -> bool:
        """Whether the data has a GPU copy now."""
        return self._buf is not None

    @property
    def is_disposed(self) -> bool:
        return self._disposed

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        state = "disposed" if self._disposed else ("gpu" if self._buf is not None else "host")
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, backend={self._home!r}, {state}, id={self.id})"

    # -- data access ----------------------------------------------------------------------
    def _check(self, what: str) -> None:
        if self._disposed:
            raise DisposedTensorError(
                f"{what} of Tensor id={self.id} {self.shape} {self.dtype}: the tensor was disposed (by dispose(), "
                "the end of its tidy(), or the removal of its backend); keep() it or return it from the tidy function")

    def _from_raw(self, raw: np.ndarray) -> np.ndarray:
        arr = raw.view(self.dtype).reshape(self.shape)
        arr.flags.writeable = False
        self._host = arr
        return arr

    def data_sync(self) -> np.ndarray:
        """The values as a read-only numpy array, reading them back from the GPU if needed (blocks)."""
        self._check("data_sync()")
        if self._host is None:
            self._from_raw(self._exe.read(self._buf, self.nbytes))
        assert self._host is not None
        return self._host

    async def data(self) -> np.ndarray:
        """The values as a read-only numpy array; a GPU readback is awaited, not blocked on."""
        self._check("data()")
        if self._host is None:
            raw = await self._exe.read_async(self._buf, self.nbytes)
            self._check("data()")  # disposed while the map was in flight
            return self._from_raw(raw)
        return self._host

    def numpy(self) -> np.ndarray:
        """The values as a read-only numpy array (as :meth:`data_sync`); ``.copy()`` it to modify."""
        return self.data_sync()

    def array(self) -> Any:
        """The values as nested Python lists (a scalar for a 0-d tensor)."""
        return self.data_sync().tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.data_sync()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """Export host data through DLPack (``np.from_dlpack(t)``, ``torch.from_dlpack(t)``).

        Raises
        ------
        BufferError
            For a tensor whose data is only on a GPU: read it back first (``t.data_sync()``).
        """
        self._check("__dlpack__()")
        if self._host is None:
            raise BufferError(f"Tensor id={self.id} is on the GPU ({self._home!r}) only; DLPack export is for host "
                              "data: call t.data_sync() (or t.numpy()) first")
        kw: dict[str, Any] = {}
        if max_version is not None:
            kw["max_version"] = max_version
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        return self._host.__dlpack__(stream=stream, **kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLCPU, 0)`` for host data, ``(kDLWebGPU, 0)`` for data only on a GPU."""
        self._check("__dlpack_device__()")
        return (_KDLCPU, 0) if self._host is not None else (_KDLWEBGPU, 0)

    # -- placement ----------------------------------------------------------------------------
    def host(self) -> np.ndarray:
        """The host array for a CPU kernel (read back if needed); internal to gpulite.ops."""
        return self.data_sync()

    def gpu(self, exe: DeviceStore) -> Any:
        """This tensor's buffer on GPU executor ``exe``, uploading it on first use there."""
        self._check("GPU use")
        if self._buf is not None and self._exe is exe:
            return self._buf
        host = self.data_sync()  # from another device: through the host
        self._drop_gpu()
        if exe.closed:
            raise DisposedTensorError(f"backend {exe.name!r} was removed")
        buf = exe.upload(host)
        if self._home != exe.name:
            _tracker.moved(self, exe.name)
        self._buf, self._exe = buf, exe
        _tracker.gpu_changed(self, True)
        return self._buf

    def to_gpu(self, backend: str | None = None) -> Tensor:
        """Put the data on a GPU now (no-op when it is there); returns this tensor.

        Parameters
        ----------
        backend : str, optional
            A GPU backend; default: the active backend if it is one, else the highest-priority
            registered GPU backend that starts.
        """
        self.gpu(_tracker.gpu_store(backend))
        return self

    @property
    def gpu_buffer(self) -> Any:
        """The ``wgpu.GPUBuffer`` holding the data (bytes from offset 0); None when host-only.

        Owned by gpulite's pool: read it (bind it in your own pipelines, copy from it), never
        write or destroy it. Valid until the tensor is disposed.
        """
        self._check("gpu_buffer")
        if self._buf is not None:
            self._exe.flush()  # the data is complete in submission order
        return self._buf

    # -- lifetime ---------------------------------------------------------------------------
    def _drop_gpu(self) -> None:
        if self._buf is not None:
            buf, exe, self._buf, self._exe = self._buf, self._exe, None, None
            _tracker.gpu_changed(self, False)
            if not exe.closed:
                exe.release(buf)

    def dispose(self) -> None:
        """Free the data now (TF.js ``t.dispose()``); using the tensor afterwards raises ``DisposedTensorError``."""
        if self._disposed:
            return
        if self._used_as_weight:
            _tracker.forget_weight(self.id)
        _tracker.untrack(self)
        self._disposed = True
        self._host = None
        if self._buf is not None:
            buf, exe, self._buf, self._exe = self._buf, self._exe, None, None
            if not exe.closed:
                exe.release(buf)

    def _drop_backend(self) -> None:
        """Its backend is being removed: dispose, as TF.js's ``removeBackend`` disposes the backend's data."""
        self.dispose()

    def __del__(self) -> None:
        try:
            if not self._disposed:
                self.dispose()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass

    # -- operators ------------------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _ops.add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _ops.add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _ops.sub(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _ops.sub(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _ops.mul(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _ops.mul(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _ops.div(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _ops.div(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _ops.matmul(self, other)

    def reshape(self, *shape: Any) -> Tensor:
        return _ops.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def transpose(self, perm: Any = None) -> Tensor:
        return _ops.transpose(self, perm)


def tensor(values: Any, dtype: Any = None) -> Tensor:
    """Make a tensor on the active backend (TF.js ``tf.tensor``).

    Parameters
    ----------
    values : array-like
        Copied. A numpy array keeps its dtype when it is supported (float64 becomes float32);
        Python floats become float32, ints int32 and bools bool (as in TF.js).
    dtype : numpy dtype, optional
        One of float32, float16, int32, int64, int16, int8, uint8, bool.

    Returns
    -------
    Tensor
        On the active backend; on a GPU backend the data is uploaded on first GPU use.
    """
    if isinstance(values, Tensor):
        values = values.data_sync()
    arr = np.asarray(values)
    if dtype is not None:
        dt = _check_dtype(dtype)
    elif isinstance(values, np.ndarray) and arr.dtype in DTYPES:
        dt = arr.dtype
    else:
        dt = _default_dtype(arr)
    host = np.array(arr, dtype=dt, copy=True, order="C")
    host.flags.writeable = False
    return Tensor(shape=tuple(int(d) for d in host.shape), dtype=dt, home=_tracker.active_backend(), host=host)


def from_host(arr: np.ndarray, home: str) -> Tensor:
    """A tensor that takes ``arr`` (a fresh array nobody else holds) without copying; internal."""
    arr.flags.writeable = False
    return Tensor(shape=arr.shape, dtype=arr.dtype, home=home, host=arr)


def from_gpu(buf: Any, exe: DeviceStore, shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
    """A tensor owning pooled buffer ``buf`` of executor ``exe``; internal."""
    return Tensor(shape=shape, dtype=dtype, home=exe.name, buf=buf, exe=exe)
