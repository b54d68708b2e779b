"""The numpy CPU backend: the executable definition of every op."""

from gpulite.backends.cpu.backend import CpuBackend, CpuContext

__all__ = ["CpuBackend", "CpuContext"]
