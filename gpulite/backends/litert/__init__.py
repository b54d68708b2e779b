"""The ``litert`` backend: LiteRT's XNNPACK kernels behind gpulite's Interpreter (needs ai-edge-litert)."""

from gpulite.backends.litert.backend import LiteRtBackend, LiteRtExecutable

__all__ = ["LiteRtBackend", "LiteRtExecutable"]
