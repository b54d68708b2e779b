"""Pose's heatmap refinement on the GPU: each landmark's window sums (``heatmap_windows.wgsl``),
recorded into the submit that reads the model's other outputs back, so a frame reads 32 bytes a
landmark instead of the whole (H, W, N) heatmap.

:meth:`HeatmapWindowsGpu.encode` takes the model's raw landmark tensor (N x ``dims`` values,
x and y in model-input pixels) and the heatmap as the interpreter's GPU outputs; the cell is
``trunc(x * scale)`` with ``scale`` = heatmap cells per input pixel. ``RefineLandmarksFromHeatmap``
finishes on the host (:func:`~gpulite.pipeline.calculators.refine_landmarks_from_heatmap.refine_from_windows`).
"""

from __future__ import annotations

import struct
from typing import Any

import wgpu

from .common import COUNTERS, STORAGE_OUT, DeviceTensor, compute_pipeline

SUMS = 8  # floats a landmark: total, best, col-weighted, row-weighted, col, row, 0, 0


def _binding(i: int, buffer: Any, offset: int, nbytes: int) -> dict[str, Any]:
    return {"binding": i, "resource": {"buffer": buffer, "offset": offset, "size": -(-nbytes // 4) * 4}}


class HeatmapWindowsGpu:
    """Window sums of one model's (1, H, W, N) heatmap around its N landmarks; ``kernel_size``
    as RefineLandmarksFromHeatmap's, ``scale`` (x, y): heatmap cells per landmark pixel."""

    def __init__(self, gdev: Any, n: int, dims: int, width: int, height: int, kernel_size: int,
                 scale: tuple[float, float]) -> None:
        self.gdev, self.n, self.dims, self.kernel_size = gdev, n, dims, kernel_size
        params = struct.pack("<4I4I4f", n, dims, width, height, (kernel_size - 1) // 2, 0, 0, 0,
                             float(scale[0]), float(scale[1]), 0.0, 0.0)
        with gdev.guard("heatmap_windows (webgpu)"):
            self.pipeline = compute_pipeline(gdev, "heatmap_windows")
            self.params = gdev.device.create_buffer(label="gpulite.pipeline.heatmap_windows.params", size=len(params),
                                                    usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
            gdev.queue.write_buffer(self.params, 0, params)
        COUNTERS.add(uploaded=len(params))  # once per model, not per frame

    def encode(self, enc: Any, landmarks: Any, heatmap: Any) -> DeviceTensor:
        """Record the dispatch into ``enc``; the (N, 8) float32 sums, to read in the same submit."""
        device = self.gdev.device
        out = device.create_buffer(label="gpulite.pipeline.heatmap_windows", size=self.n * SUMS * 4,
                                   usage=STORAGE_OUT)
        bg = device.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
            _binding(0, landmarks.buffer, landmarks.offset, landmarks.nbytes),
            _binding(1, heatmap.buffer, heatmap.offset, heatmap.nbytes),
            _binding(2, out, 0, out.size),
            {"binding": 3, "resource": {"buffer": self.params, "offset": 0, "size": self.params.size}}])
        cp = enc.begin_compute_pass()
        cp.set_pipeline(self.pipeline)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(self.n, 1, 1)
        cp.end()
        return DeviceTensor(self.gdev, out, 0, (self.n, SUMS))
