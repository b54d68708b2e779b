"""The checks ``Interpreter.bind_input`` makes before an application buffer becomes an input.

A bad binding must fail here, at bind time, with what was expected and what came: if it got
through, wgpu would reject the invoke's ``copy_buffer_to_buffer`` (or, for a buffer of
another device, fail deep inside command encoding) with a message that names neither the
tensor nor the fix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import wgpu

from gpulite.errors import DeviceMismatchError
from gpulite.graph.ir import Graph

from .context import NHWC
from .device import describe_device


def _what(graph: Graph, i: int) -> str:
    return f"bind_input of tensor {i} ({graph.tensors[i].name!r})"


def check_input(graph: Graph, i: int) -> None:
    """Raise ValueError unless tensor i is a graph input."""
    if i not in graph.inputs:
        raise ValueError(f"{_what(graph, i)}: not a graph input; inputs are {list(graph.inputs)}")


def check_binding(gdev: Any, graph: Graph, i: int, buffer: Any, *, offset: int, layout: str, stored: bool) -> None:
    """Raise unless ``buffer[offset:]`` can be input i on ``gdev``; probes the device last.

    Parameters
    ----------
    stored : bool
        Whether the memory plan stores tensor i (an input no node reads has no arena slot).

    Raises
    ------
    DeviceMismatchError
        The buffer belongs to another device; the message names both.
    TypeError, ValueError
        Not a buffer; not a stored float32 graph input; a layout other than NHWC; no
        ``COPY_SRC`` usage; an offset that is negative or not a multiple of 4; too few bytes.
    DeviceLostError
        The device is lost.
    """
    check_input(graph, i)
    t, what = graph.tensors[i], _what(graph, i)
    if not stored:
        raise ValueError(f"{what}: the plan stores no data for it (no node reads it)")
    if t.dtype != np.float32:
        raise ValueError(f"{what}: GPU buffers can be bound to float32 inputs only; this one is {t.dtype}")
    if layout != NHWC:
        raise ValueError(f"{what}: layout {layout!r} is not supported; expected {NHWC!r} (dense float32)")
    if not isinstance(buffer, wgpu.GPUBuffer):
        raise TypeError(f"{what}: expected a wgpu.GPUBuffer, got {type(buffer).__name__}")
    owner = getattr(buffer, "_device", None)  # wgpu-py records each object's device here
    if owner is not gdev.device:
        raise DeviceMismatchError(
            f"{what}: the buffer belongs to {describe_device(owner)} but the interpreter runs on "
            f"{gdev.describe()}; pass device=<that GPUDevice> to the Interpreter, or copy the data")
    if not buffer.usage & wgpu.BufferUsage.COPY_SRC:
        raise ValueError(f"{what}: the buffer's usage {buffer.usage!r} lacks COPY_SRC, which the GPU-side copy "
                         "into the interpreter needs")
    if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool) or offset < 0 or offset % 4:
        raise ValueError(f"{what}: offset must be a non-negative multiple of 4 bytes, got {offset!r}")
    need = -(-t.nbytes // 4) * 4
    if offset + need > buffer.size:
        raise ValueError(f"{what}: needs {need} bytes ({t.shape} float32) from offset {offset}, but the buffer "
                         f"holds {buffer.size} bytes")
    gdev.check_alive("bind_input")
