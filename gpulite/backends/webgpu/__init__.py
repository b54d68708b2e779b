"""The WebGPU backend (the only package that imports ``wgpu``); see docs/webgpu.md."""

from gpulite.backends.webgpu.backend import WebGpuBackend
from gpulite.backends.webgpu.device import GpuDevice, NoAdapterError, adapter_info, get_device
from gpulite.backends.webgpu.executable import WebGpuExecutable
from gpulite.backends.webgpu.program import KernelError, Program

__all__ = ["GpuDevice", "KernelError", "NoAdapterError", "Program", "WebGpuBackend", "WebGpuExecutable",
           "adapter_info", "get_device"]
