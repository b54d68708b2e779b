"""Exception classes. Every error says what was expected and what came."""

from __future__ import annotations


class GpuliteError(Exception):
    """Base class of every gpulite error."""


class ModelError(GpuliteError, ValueError):
    """A .tflite file is malformed, truncated or uses something this reader cannot decode."""


class UnsupportedOpError(GpuliteError, NotImplementedError):
    """An op has no kernel on the chosen backend; raised at ``allocate_tensors``."""

    def __init__(self, op: str, node_index: int, backend: str, detail: str = "") -> None:
        self.op, self.node_index, self.backend = op, node_index, backend
        msg = f"op {op} (node {node_index}) has no kernel on backend {backend!r}"
        super().__init__(msg + (f": {detail}" if detail else ""))


class ShapeError(GpuliteError, ValueError):
    """Shapes of a node's tensors do not fit together."""


class DeviceMismatchError(GpuliteError, ValueError):
    """A GPU object belongs to a different device than the interpreter's."""


class DeviceLostError(GpuliteError, RuntimeError):
    """The GPU device was lost; make a new Interpreter or call ``recover()``."""


class DeviceLimitsError(GpuliteError, RuntimeError):
    """A GPU device lacks a feature or a limit the compiled model needs (raised at ``allocate_tensors``)."""


class StaleTensorError(GpuliteError, RuntimeError):
    """A GPU tensor handle was used after the invoke/allocate/close that invalidated it."""
