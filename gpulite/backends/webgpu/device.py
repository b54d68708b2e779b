"""Adapter choice, device creation and what a future ``gpulite info`` prints.

One :class:`GpuDevice` wraps a ``wgpu`` device together with the things that belong to the
device rather than to one model: the shared bind-group layout, the pipeline layout and the
pipeline cache. The process-wide default device (:func:`default_device`) is what makes two
interpreters of the same model share compiled pipelines.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import wgpu

from gpulite.errors import GpuliteError

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


def adapter_info() -> list[dict[str, Any]]:
    """One dict per adapter: name, type, backend, features and limits (for ``gpulite info``)."""
    out = []
    for a in enumerate_adapters():
        info = dict(a.info)
        out.append({
            "name": _adapter_name(a),
            "vendor": info.get("vendor", ""),
            "adapter_type": info.get("adapter_type", ""),
            "backend_type": info.get("backend_type", ""),
            "shader_f16": "shader-f16" in a.features,
            "features": sorted(a.features),
            "limits": dict(a.limits),
        })
    return out


class GpuDevice:
    """A wgpu device plus the objects shared by every model compiled on it.

    Parameters
    ----------
    adapter : wgpu adapter, optional
        Defaults to :func:`choose_adapter`.
    """

    def __init__(self, adapter: Any = None) -> None:
        self.adapter = adapter if adapter is not None else choose_adapter()
        limits = {k: self.adapter.limits[k] for k in _WANTED_LIMITS if k in self.adapter.limits}
        self.has_f16 = "shader-f16" in self.adapter.features
        self.device = self.adapter.request_device_sync(label="gpulite", required_limits=limits)
        self.limits = dict(self.device.limits)
        self.name = _adapter_name(self.adapter)
        self.queue = self.device.queue
        # Every gpulite kernel binds the same things: the plan's arena (read-write storage,
        # activations and constants together), its own slice of a uniform buffer, and the arena
        # again for vec4 access. One layout for all pipelines means any bind group fits any
        # pipeline. (WebGPU allows one buffer in several writable storage bindings.)
        storage = {"type": wgpu.BufferBindingType.storage}
        self.bind_group_layout = self.device.create_bind_group_layout(label="gpulite.arena+params", entries=[
            {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage},
            {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": wgpu.BufferBindingType.uniform}},
            {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage},
        ])
        self.pipeline_layout = self.device.create_pipeline_layout(
            label="gpulite", bind_group_layouts=[self.bind_group_layout])
        self.pipelines: dict[tuple, tuple[str, Any]] = {}  # program key -> (wgsl, pipeline)
        self._closed = False

    def __repr__(self) -> str:
        return f"GpuDevice({self.name!r}, {self.adapter.info.get('backend_type', '?')})"

    def close(self) -> None:
        """Drop cached pipelines and destroy the device; executables on it stop working."""
        if not self._closed:
            self.pipelines.clear()
            self.device.destroy()
            self._closed = True


_devices: dict[str | None, GpuDevice] = {}
_lock = threading.Lock()


def get_device(adapter_name: str | None = None) -> GpuDevice:
    """The process-wide device for an adapter (created on first use).

    Every interpreter asking for the same adapter gets the same device, so they share its
    pipeline cache. ``None`` means ``GPULITE_ADAPTER`` or else the high-performance adapter.
    """
    key = adapter_name if adapter_name is not None else os.environ.get(ENV_ADAPTER)
    with _lock:
        dev = _devices.get(key)
        if dev is None or dev._closed:
            dev = _devices[key] = GpuDevice(choose_adapter(key))
        return dev
