"""Exception classes. Every error says what was expected and what came."""

from __future__ import annotations

import reprlib
from typing import Any

_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother = 3, 80, 80
_BRIEF.maxlist = _BRIEF.maxtuple = _BRIEF.maxdict = _BRIEF.maxset = _BRIEF.maxfrozenset = 8
_BRIEF_MAX = 200  # characters


def brief(value: Any) -> str:
    """``repr(value)`` cut to a bounded size (nesting, items, string length), for error messages.

    Every message that quotes a value from a user's file goes through this, so a huge or
    deeply shared value (a YAML alias bomb, a megabyte name) cannot make the message itself
    the problem.
    """
    text = _BRIEF.repr(value)
    return text if len(text) <= _BRIEF_MAX else text[:_BRIEF_MAX - 3] + "..."


class GpuliteError(Exception):
    """Base class of every gpulite error."""


class ModelError(GpuliteError, ValueError):
    """A .tflite file is malformed, truncated or uses something this reader cannot decode."""


class UnsupportedOpError(GpuliteError, NotImplementedError):
    """An op has no kernel on the chosen backend; raised at ``allocate_tensors``."""

    def __init__(self, op: str, node_index: int, backend: str, detail: str = "") -> None:
        self.op, self.node_index, self.backend = op, node_index, backend
        self.detail = detail  # why, without the op/node/backend prefix
        msg = f"op {op} (node {node_index}) has no kernel on backend {backend!r}"
        super().__init__(msg + (f": {detail}" if detail else ""))


class ShapeError(GpuliteError, ValueError):
    """Shapes of a node's tensors do not fit together."""


class DeviceMismatchError(GpuliteError, ValueError):
    """A GPU object belongs to a different device than the interpreter's."""


class DeviceLostError(GpuliteError, RuntimeError):
    """The GPU device was lost; make a new Interpreter or call ``recover()``.

    ``reason`` says why (as far as known) and ``device`` names the device, when the backend knows them.
    """

    reason: str = ""
    device: str = ""


class DeviceLimitsError(GpuliteError, RuntimeError):
    """A GPU device lacks a feature or a limit the compiled model needs (raised at ``allocate_tensors``)."""


class ConcurrentUseError(GpuliteError, RuntimeError):
    """An Interpreter was called from a thread while another thread was inside one of its calls.

    An Interpreter is not thread-safe (nor is LiteRT's, which raises a ``RuntimeError`` there):
    use one per thread, or hold a lock around each ``set_tensor``/``invoke``/``get_tensor`` sequence.
    """


class StaleTensorError(GpuliteError, RuntimeError):
    """A GPU tensor handle was used after the invoke/allocate/close that invalidated it."""


class GraphConfigError(GpuliteError, ValueError):
    """A calculator graph's config breaks a contract (unknown calculator, stream, port, option, type)."""


class CalculatorContractError(GpuliteError, TypeError):
    """A calculator class declares a malformed contract (ports, options, policy) or a duplicate name."""


class CalculatorError(GpuliteError, RuntimeError):
    """A calculator raised in ``open``/``process``/``close``; the original exception is ``__cause__``."""

    def __init__(self, node: str, calculator: str, phase: str, timestamp: int | None, cause: BaseException) -> None:
        self.node, self.calculator, self.phase, self.timestamp = node, calculator, phase, timestamp
        at = f" at timestamp {timestamp}" if timestamp is not None else ""
        call = f"{phase}()" if phase.isidentifier() else phase
        super().__init__(f"node {node!r} ({calculator}) failed in {call}{at}: {type(cause).__name__}: {cause}")


class TimestampError(GpuliteError, ValueError):
    """A packet's timestamp is not after the previous one on its stream (streams deliver in order)."""


class GraphStateError(GpuliteError, RuntimeError):
    """A graph call came at the wrong point of its life (packet after close, wait with inputs open...)."""


class GraphTimeoutError(GpuliteError, TimeoutError):
    """A graph call waited longer than its timeout (back-pressure that never eased, a stuck calculator)."""


class DisposedTensorError(GpuliteError, RuntimeError):
    """An eager :class:`~gpulite.tensor.Tensor` was used after ``dispose()`` (or its ``tidy`` ended)."""


class BackendNotFoundError(GpuliteError, ValueError):
    """No backend is registered under the requested name."""


class BackendError(GpuliteError, RuntimeError):
    """A registered backend could not start (no adapter, a failing factory, ...)."""


class FlagError(GpuliteError, ValueError):
    """``gpulite.env()`` was given an unknown flag, or a value of the wrong type."""


class OutOfMemoryError(GpuliteError, MemoryError):
    """The memory a compiled plan needs (its arena) could not be allocated; raised at ``allocate_tensors``."""


class NaNError(GpuliteError, FloatingPointError):
    """A kernel produced NaN while the ``check_nans`` flag was on."""
