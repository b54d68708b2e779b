"""Adapter choice, device creation, device loss and what ``gpulite info`` prints.

One :class:`GpuDevice` wraps a ``wgpu`` device together with the things that belong to the
device rather than to one model: the shared bind-group layout, the pipeline layout and the
pipeline cache. The process-wide devices of :func:`get_device` are what make two interpreters
of the same model share compiled pipelines; :meth:`GpuDevice.wrap` does the same for a
``wgpu.GPUDevice`` the application created itself (gpulite then never destroys it).

Device loss: wgpu-native reports a lost device only as a validation error ("Parent device is
lost") on the next call that touches it, and wgpu-py does not implement ``device.lost``. So
:meth:`GpuDevice.check_alive` probes, and :meth:`GpuDevice.guard` turns such errors into
:class:`~gpulite.errors.DeviceLostError`; once seen, the loss is remembered.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import wgpu

from gpulite.errors import DeviceLostError, GpuliteError

ENV_ADAPTER = "GPULITE_ADAPTER"

# Limits gpulite relies on: the arena is one storage binding, so a device gets the largest
# storage binding and buffer the adapter allows instead of WebGPU's conservative defaults.
_WANTED_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size")


class NoAdapterError(GpuliteError, RuntimeError):
    """No WebGPU adapter exists, or none matches ``GPULITE_ADAPTER``."""


def _adapter_name(adapter: Any) -> str:
    info = adapter.info
    return f"{info.get('device', '')} {info.get('description', '')}".strip()


def enumerate_adapters() -> list[Any]:
    """Every adapter wgpu can see (possibly empty)."""
    try:
        return list(wgpu.gpu.enumerate_adapters_sync())
    except Exception:  # no driver at all: treat as "no adapters", callers decide what to do
        return []


def choose_adapter(name: str | None = None) -> Any:
    """Pick an adapter.

    Parameters
    ----------
    name : str, optional
        Case-insensitive substring of the adapter's device/description name. Defaults to
        the ``GPULITE_ADAPTER`` environment variable; without either, the high-performance
        adapter is chosen.

    Raises
    ------
    NoAdapterError
        When no adapter exists or none matches ``name``.
    """
    name = name if name is not None else os.environ.get(ENV_ADAPTER)
    if name:
        adapters = enumerate_adapters()
        for a in adapters:
            if name.lower() in _adapter_name(a).lower():
                return a
        seen = [f"{_adapter_name(a)} ({a.info.get('backend_type', '?')})" for a in adapters]
        raise NoAdapterError(f"no WebGPU adapter matches {ENV_ADAPTER}={name!r}; adapters: {seen or 'none'}")
    why = "the high-performance request returned none"
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:  # the request can fail where enumeration still finds one (forced backends)
        adapter, why = None, str(e)
    if adapter is None:
        adapters = enumerate_adapters()
        if not adapters:
            raise NoAdapterError(f"no WebGPU adapter available: {why}")
        adapter = adapters[0]
    return adapter


# The limits a compute-only runtime such as gpulite lives by, in the order `gpulite info` lists
# them: the arena is one storage binding inside one buffer; workgroup sizes, invocations and the
# dispatch grid bound every kernel; the bind-group layout needs 2-3 storage buffers per stage;
# uniform blocks and binding offsets follow the last two.
KEY_LIMITS = (
    "max-storage-buffer-binding-size", "max-buffer-size",
    "max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
    "max-compute-invocations-per-workgroup", "max-compute-workgroups-per-dimension",
    "max-storage-buffers-per-shader-stage", "max-uniform-buffer-binding-size",
    "min-storage-buffer-offset-alignment",
)


def adapter_info() -> list[dict[str, Any]]:
    """One dict per adapter (for ``gpulite info``): name, vendor, type, backend, features,
    ``shader_f16``, all ``limits``, ``key_limits`` (the :data:`KEY_LIMITS` it reports, in that
    order) and ``default``: whether :func:`choose_adapter` (``GPULITE_ADAPTER`` or the
    high-performance request) picks it, i.e. what ``backend="webgpu"`` runs on by default."""
    try:
        chosen = choose_adapter()
        chosen_key = (_adapter_name(chosen), chosen.info.get("backend_type", ""))
    except NoAdapterError:
        chosen_key = None
    out = []
    for a in enumerate_adapters():
        info = dict(a.info)
        limits = dict(a.limits)
        out.append({
            "name": _adapter_name(a),
            "vendor": info.get("vendor", ""),
            "adapter_type": info.get("adapter_type", ""),
            "backend_type": info.get("backend_type", ""),
            "shader_f16": "shader-f16" in a.features,
            "features": sorted(a.features),
            "limits": limits,
            "key_limits": {k: limits[k] for k in KEY_LIMITS if k in limits},
            "default": (_adapter_name(a), info.get("backend_type", "")) == chosen_key,
        })
    return out


def describe_device(device: Any) -> str:
    """A ``wgpu.GPUDevice`` named for error messages: label, process-unique id and adapter."""
    adapter = getattr(device, "adapter", None)
    where = _adapter_name(adapter) if adapter is not None else "unknown adapter"
    return f"GPUDevice {getattr(device, 'label', '') or '(no label)'!r} #{getattr(device, 'uid', '?')} on {where}"


def _is_loss(err: BaseException) -> bool:
    # wgpu-native words it "Parent device is lost" (validation) or "Device lost"/"DeviceLost"
    # (map and callback messages); there is no error type for it.
    msg = str(err).lower()
    return "device is lost" in msg or "device lost" in msg or "devicelost" in msg


_SUBGROUP_PROBE = """@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) size: u32) {
    out[t] = lane;
    out[256u + t] = size;
    out[512u + t] = subgroupShuffleXor(t, 1u);
}"""


def _probe_subgroups(device: Any) -> bool:
    """Run :data:`_SUBGROUP_PROBE`; True when its subgroups are what the kernels assume."""
    try:
        module = device.create_shader_module(label="gpulite.subgroup-probe", code=_SUBGROUP_PROBE)
        pipeline = device.create_compute_pipeline(label="gpulite.subgroup-probe", layout="auto",
                                                  compute={"module": module, "entry_point": "main"})
        buf = device.create_buffer(label="gpulite.subgroup-probe", size=4 * 768,
                                   usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
        entry = {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": 4 * 768}}
        bg = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[entry])
        enc = device.create_command_encoder(label="gpulite.subgroup-probe")
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipeline)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(1)
        cp.end()
        device.queue.submit([enc.finish()])
        lane, size, xor = np.frombuffer(device.queue.read_buffer(buf), np.uint32).reshape(3, 256)
        buf.destroy()
    except Exception:  # a driver that refuses the probe: no subgroups, the workgroup-memory trees
        return False
    t = np.arange(256, dtype=np.uint32)
    sg = int(size[0])
    return bool(sg >= 4 and sg & (sg - 1) == 0 and 256 % sg == 0 and (size == sg).all()
                and (lane == t % sg).all() and (xor == (t ^ 1)).all())


class GpuDevice:
    """A wgpu device plus the objects shared by every model compiled on it.

    Parameters
    ----------
    adapter : wgpu adapter, optional
        Adapter to create a device on; defaults to :func:`choose_adapter`. Ignored when
        ``device`` is given.
    device : wgpu.GPUDevice, optional
        Use this existing device instead of creating one (see :meth:`wrap`, which also
        shares one wrapper per device). gpulite then does not own it: :meth:`close` leaves
        it alive.

    Attributes
    ----------
    owns_device : bool
        True when gpulite created the device and :meth:`close` destroys it.
    has_f16 : bool
        Whether ``shader-f16`` is enabled on the device (gpulite enables it on devices it
        creates whenever the adapter has it).
    has_timestamps : bool
        Whether ``timestamp-query`` is enabled (likewise), for per-dispatch GPU times.
    subgroups : bool
        Whether kernels may use subgroup operations (see the property).
    lost : str or None
        Why the device is known to be lost, or None while it is usable as far as known.
    """

    def __init__(self, adapter: Any = None, *, device: Any = None) -> None:
        if device is not None:
            if not isinstance(device, wgpu.GPUDevice):
                raise TypeError(f"device must be a wgpu.GPUDevice, got {type(device).__name__}")
            self.adapter, self.device, self.owns_device = device.adapter, device, False
        else:
            self.adapter = adapter if adapter is not None else choose_adapter()
            limits = {k: self.adapter.limits[k] for k in _WANTED_LIMITS if k in self.adapter.limits}
            # shader-f16 for fp16 plans; timestamp-query for `gpulite profile` (per-dispatch GPU time);
            # subgroup for the reductions' trees (used once a probe vouches for it: `subgroups`)
            features = [f for f in ("shader-f16", "timestamp-query", "subgroup") if f in self.adapter.features]
            self.device = self.adapter.request_device_sync(
                label="gpulite", required_limits=limits, required_features=features)
            self.owns_device = True
        self.has_f16 = "shader-f16" in self.device.features
        self.has_timestamps = "timestamp-query" in self.device.features
        self.limits = dict(self.device.limits)
        self.name = _adapter_name(self.adapter)
        self.queue = CountedQueue(self.device.queue)
        self.lost: str | None = None
        self._layouts: dict[str, Any] = {}  # weight storage ("f32"/"f16") -> bind-group layout
        self._pipeline_layouts: dict[str, Any] = {}
        self.pipelines: dict[tuple, tuple[str, Any]] = {}  # program key -> (wgsl, pipeline)
        self._closed = False
        self._subgroups: bool | None = None

    @property
    def bind_group_layout(self) -> Any:
        """The one bind-group layout of every gpulite kernel (created on first use).

        Every gpulite kernel binds the same things: the plan's arena (read-write storage,
        activations and constants together), its own slice of a uniform buffer, and the arena
        again for vec4 access. One layout for all pipelines means any bind group fits any
        pipeline. (WebGPU allows one buffer in several writable storage bindings.) It is made
        lazily so that a device too small for it is reported by the limit check at
        ``allocate_tensors`` (requirements.py), not by wgpu when the device is wrapped.
        """
        return self.bind_group_layout_for("f32")

    @property
    def pipeline_layout(self) -> Any:
        """The pipeline layout over :attr:`bind_group_layout` (created on first use)."""
        return self.pipeline_layout_for("f32")

    def bind_group_layout_for(self, weights: str) -> Any:
        """The bind-group layout of programs whose weights are stored as ``weights``.

        ``"f32"``: :attr:`bind_group_layout`. ``"f16"`` (``precision="fp16"``): the same three
        bindings plus the arena a fourth time (binding 3), which those kernels declare as
        ``array<vec4<f16>>`` to read their f16 weights. A separate layout, so fp32 plans and
        gpulite's other users of the three-binding layout are untouched by fp16.
        """
        layout = self._layouts.get(weights)
        if layout is None:
            storage = {"type": wgpu.BufferBindingType.storage}
            uniform = {"type": wgpu.BufferBindingType.uniform}
            entries = [
                {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage},
                {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": uniform},
                {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage},
            ]
            if weights == "f16":
                entries.append({"binding": 3, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage})
            label = "gpulite.arena+params" + ("+f16" if weights == "f16" else "")
            layout = self._layouts[weights] = self.device.create_bind_group_layout(label=label, entries=entries)
        return layout

    def pipeline_layout_for(self, weights: str) -> Any:
        """The pipeline layout over :meth:`bind_group_layout_for` ``(weights)`` (created on first use)."""
        layout = self._pipeline_layouts.get(weights)
        if layout is None:
            layout = self._pipeline_layouts[weights] = self.device.create_pipeline_layout(
                label="gpulite" + ("+f16" if weights == "f16" else ""),
                bind_group_layouts=[self.bind_group_layout_for(weights)])
        return layout

    @classmethod
    def wrap(cls, device: Any) -> GpuDevice:
        """The shared :class:`GpuDevice` for an application's own ``wgpu.GPUDevice``.

        Interpreters given the same raw device share one wrapper and so one pipeline cache.
        The wrapper lives as long as something (a backend) holds it; it never destroys the
        device, which stays the application's.
        """
        if not isinstance(device, wgpu.GPUDevice):
            raise TypeError(f"device must be a wgpu.GPUDevice, got {type(device).__name__}")
        with _lock:
            gdev = _wrapped.get(device.uid)
            if gdev is None or gdev._closed:
                gdev = cls(device=device)
                _wrapped[device.uid] = gdev
            return gdev

    def __repr__(self) -> str:
        return f"GpuDevice({self.name!r}, {self.adapter.info.get('backend_type', '?')})"

    def describe(self) -> str:
        """This device named for messages (label, id, adapter)."""
        return describe_device(self.device)

    # -- loss -------------------------------------------------------------------------------
    def _mark_lost(self, why: str) -> DeviceLostError:
        self.lost = self.lost or why
        err = DeviceLostError(
            f"the GPU device was lost ({self.lost}); {self.describe()} cannot run or read anything any more: "
            "call Interpreter.recover() or make a new Interpreter")
        err.reason, err.device = self.lost, self.describe()
        return err

    def check_alive(self, what: str) -> None:
        """Raise :class:`DeviceLostError` if the device is lost; probes it (a few µs).

        The probe creates and destroys a 4-byte buffer: wgpu-native validates that against
        the device's state, and it leaves nothing behind. (Finishing an empty command encoder
        would too, but a command buffer dropped unsubmitted stays in wgpu-native's registry:
        one leaked entry per probe. And ``queue.submit`` on a lost device aborts the process,
        so a probe must never submit.) ``what`` names the caller's operation in the message.
        """
        if self.lost is None and self._closed:
            self.lost = "gpulite closed it"
        if self.lost is None and getattr(self.device, "_poller", True) is None:
            self.lost = "destroy() was called on it"  # wgpu-py drops the poller in destroy()
        if self.lost is None:
            try:
                self.device.create_buffer(label="gpulite.probe", size=4, usage=wgpu.BufferUsage.COPY_DST).destroy()
            except Exception as e:
                if not _is_loss(e):
                    raise
                self.lost = str(e).strip().splitlines()[-1].strip()
        if self.lost is not None:
            raise self._mark_lost(self.lost) from None

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Run GPU calls; a device-loss error inside becomes :class:`DeviceLostError`."""
        if self.lost is not None:
            raise self._mark_lost(self.lost)
        try:
            yield
        except DeviceLostError:
            raise
        except Exception as e:
            destroyed = getattr(self.device, "_poller", True) is None
            if _is_loss(e) or destroyed:
                why = "destroy() was called on it" if destroyed else str(e).strip().splitlines()[-1].strip()
                raise self._mark_lost(f"{why}; seen during {what}") from e
            raise

    @property
    def subgroups(self) -> bool:
        """Whether the reductions may use subgroup shuffles on this device: ``subgroup`` is
        enabled and a probe (one workgroup of 256 threads, asked once per device) finds what
        their trees assume: a power-of-two subgroup size of at least 4 and subgroups made of
        consecutive threads (lane = local index mod size), as on NVIDIA, AMD, Intel and
        lavapipe. Otherwise the trees stay in workgroup memory (also correct, more barriers).
        """
        if self._subgroups is None:
            self._subgroups = "subgroup" in self.device.features and _probe_subgroups(self.device)
        return self._subgroups

    def close(self) -> None:
        """Drop cached pipelines; destroy the device if gpulite created it.

        Executables compiled on this device stop working. A device the application passed in
        (``owns_device`` False) is left alive.
        """
        if not self._closed:
            self.pipelines.clear()
            if self.owns_device:
                self.device.destroy()
            self._closed = True


class CountedQueue:
    """A device's queue that counts submits process-wide (:func:`submit_count`): ``submit``
    calls, and those an invoke's encoder makes itself (:meth:`count`); the rest is the wgpu
    queue's own. The solutions report submits per frame from it."""

    __slots__ = ("_queue",)

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    def submit(self, command_buffers: Any) -> None:
        self.count()
        self._queue.submit(command_buffers)

    def count(self) -> None:
        """Count one submit made without :meth:`submit` (the invoke's encoder, :mod:`.encode`)."""
        global _submits
        _submits += 1  # one bytecode increment under the GIL: a race can lose a count, never corrupt

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


_submits = 0


def submit_count() -> int:
    """Queue submits by gpulite's devices in this process so far."""
    return _submits


_devices: dict[str | None, GpuDevice] = {}
_wrapped: weakref.WeakValueDictionary[int, GpuDevice] = weakref.WeakValueDictionary()
_lock = threading.Lock()


def _usable(dev: GpuDevice | None) -> bool:
    if dev is None or dev._closed:
        return False
    try:
        dev.check_alive("get_device")
    except DeviceLostError:
        return False
    return True


def get_device(adapter_name: str | None = None) -> GpuDevice:
    """The process-wide device for an adapter (created on first use, re-created once lost).

    Every interpreter asking for the same adapter gets the same device, so they share its
    pipeline cache. ``None`` means ``GPULITE_ADAPTER`` or else the high-performance adapter.
    These devices belong to this module and live until the process ends.
    """
    key = adapter_name if adapter_name is not None else os.environ.get(ENV_ADAPTER)
    with _lock:
        dev = _devices.get(key)
        if not _usable(dev):
            dev = _devices[key] = GpuDevice(choose_adapter(key))
        return dev
