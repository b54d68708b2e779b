"""What kind of adapter the WebGPU backend would get, without creating a device.

The backend registry (:mod:`gpulite.backends.registry`) ranks WebGPU below the numpy backend
when the adapter is a software rasteriser of CPU type (lavapipe/llvmpipe, SwiftShader, WARP):
there the "GPU" is the same CPU cores running an emulation layer, and numpy's BLAS wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from .device import _adapter_name, choose_adapter


@dataclass(frozen=True)
class AdapterKind:
    """The adapter WebGPU would use.

    Attributes
    ----------
    name : str
        Device and description, as ``gpulite info`` prints them.
    adapter_type : str
        wgpu's ``adapter_type``: ``"DiscreteGPU"``, ``"IntegratedGPU"``, ``"CPU"``, ...
    backend_type : str
        ``"Vulkan"``, ``"Metal"``, ``"D3D12"``, ...
    """

    name: str
    adapter_type: str
    backend_type: str

    @property
    def is_software(self) -> bool:
        """True for an adapter of CPU type (software rendering on the CPU)."""
        return self.adapter_type.lower() == "cpu"


def adapter_kind() -> AdapterKind:
    """The adapter :func:`~.device.get_device` would pick (``GPULITE_ADAPTER`` respected).

    Raises
    ------
    NoAdapterError
        When there is no adapter (or none matches ``GPULITE_ADAPTER``).
    """
    a = choose_adapter()
    info = dict(a.info)
    return AdapterKind(_adapter_name(a), str(info.get("adapter_type", "")), str(info.get("backend_type", "")))
