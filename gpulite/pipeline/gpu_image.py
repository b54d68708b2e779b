"""``GpuImage``: an image that stays on the GPU between calculators.

This module does not import ``wgpu`` (the pipeline layer imports no backend); the texture or
buffer is typed ``Any``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

#: format -> (channels, bytes per pixel). Add a row when a producer needs a new layout.
FORMATS: dict[str, tuple[int, int]] = {
    "rgba8unorm": (4, 4), "bgra8unorm": (4, 4), "r8unorm": (1, 1), "rgba16float": (4, 8),
    "rgba32float": (4, 16), "r32float": (1, 4),
    # Buffer layouts (row-major, tightly packed, no row padding):
    "rgb8": (3, 3), "rgba8": (4, 4), "f32x1": (1, 4), "f32x3": (3, 12), "f32x4": (4, 16),
}


@dataclass(frozen=True)
class GpuImage:
    """An image held by a ``wgpu`` texture or storage buffer on ``device``.

    Parameters
    ----------
    handle
        A ``wgpu.GPUTexture`` (texture formats such as ``"rgba8unorm"``) or a ``wgpu.GPUBuffer``
        (buffer layouts such as ``"rgb8"``, ``"f32x3"``: row-major HWC, tightly packed).
    width, height
        Size in pixels.
    format
        A key of :data:`FORMATS`.
    device
        The ``wgpu.GPUDevice`` that owns ``handle``; consumers on another device must copy.

    Notes
    -----
    Lifetime: the image does not own ``handle`` exclusively; the Python reference keeps the GPU
    object alive, so the texture lives as long as any packet (or user) references this image.
    A producer must not write into a handle after emitting it, because consumers may still be
    reading it at later points of the graph; a producer that recycles textures must wait until
    the previous image is no longer referenced (e.g. a pool that checks ``sys.getrefcount``).

    Examples
    --------
    >>> img = GpuImage(handle=None, width=640, height=480, format="rgba8unorm", device=None)
    >>> img.size, img.channels
    ((640, 480), 4)
    """

    handle: Any
    width: int
    height: int
    format: str
    device: Any = None

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError(f"GpuImage {name} must be a positive int, got {v!r}")
            object.__setattr__(self, name, int(v))   # numpy ints become plain ints
        if self.format not in FORMATS:
            raise ValueError(f"GpuImage format must be one of {sorted(FORMATS)}, got {self.format!r}")

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return (self.width, self.height)

    @property
    def channels(self) -> int:
        """Channels per pixel of :attr:`format`."""
        return FORMATS[self.format][0]

    @property
    def nbytes(self) -> int:
        """Bytes of pixel data (tightly packed)."""
        return self.width * self.height * FORMATS[self.format][1]


class SharedFrame(np.ndarray):
    """A host frame that the GPU calculators upload once, however many of them warp it.

    ``frame.view(SharedFrame)`` (no copy) is the frame of one graph input; the first
    ``ImageToTensor`` on webgpu keeps its GPU copy in :attr:`gpu_copy` (device, buffer) and the
    others (a detector, each landmark region of a loop) reuse it. Make a new view per frame: the
    copy is not refreshed when the pixels change. Arrays derived from it (slices) start without
    a copy.
    """

    gpu_copy: Any

    def __array_finalize__(self, obj: Any) -> None:
        self.gpu_copy = None
