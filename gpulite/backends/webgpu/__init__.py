"""The WebGPU backend (the only package that imports ``wgpu``); see docs/webgpu.md."""

from gpulite.backends.webgpu import runtime_dir
from gpulite.backends.webgpu.backend import WebGpuBackend
from gpulite.backends.webgpu.device import GpuDevice, NoAdapterError, adapter_info, get_device
from gpulite.backends.webgpu.executable import WebGpuExecutable
from gpulite.backends.webgpu.program import KernelError, Program

# Importing wgpu loads no driver; asking for an adapter does, after this.
runtime_dir.ensure()

__all__ = ["GpuDevice", "KernelError", "NoAdapterError", "Program", "WebGpuBackend", "WebGpuExecutable",
           "adapter_info", "get_device"]
