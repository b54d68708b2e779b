"""RefineLandmarksFromHeatmap: move landmarks to the heatmap's local centre of mass (MediaPipe's calculator).

For each landmark i the heatmap channel i (sigmoid of the raw values) is read in a
``kernel_size`` window around the landmark's cell (shrunk at the edges); if its largest
confidence reaches ``min_confidence_to_refine``, x and y become the confidence-weighted mean
of the window's cell indices divided by the heatmap size. Landmarks are relative to the model
input (refine *before* projecting onto the image). As in MediaPipe, the cell is
``int(x * width)`` (truncated toward zero: a point just left of the heatmap counts as
column 0) and the new position is the mean cell *index* (no half-cell offset).

On webgpu the heatmap need not come back: ``Inference``'s ``heatmap_windows`` option sums each
landmark's window on the GPU and passes a :class:`HeatmapWindows` in its place, which
:func:`refine_from_windows` finishes with the same rule (the sums in float32).

Usage (pose, heatmap = model output 3 (1, 64, 64, 39))::

    - calculator: RefineLandmarksFromHeatmap
      input_stream: ["NORM_LANDMARKS:raw_landmarks", "TENSORS:heatmap_tensors"]
      output_stream: "NORM_LANDMARKS:refined_landmarks"
      options: {kernel_size: 7}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import LandmarkList, PipelineValueError, host_array
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class RefineLandmarksFromHeatmapOptions:
    """MediaPipe's ``RefineLandmarksFromHeatmapCalculatorOptions``."""

    kernel_size: int = 9
    min_confidence_to_refine: float = 0.5
    refine_presence: bool = False
    refine_visibility: bool = False

    def __post_init__(self) -> None:
        if self.kernel_size < 1:
            raise ValueError(f"kernel_size must be >= 1, got {self.kernel_size}")


@dataclass(frozen=True)
class HeatmapWindows:
    """Each landmark's window over the heatmap, summed on the GPU (``Inference``'s
    ``heatmap_windows`` option) in place of the heatmap itself: ``sums`` (N, 8) float32 rows
    of total confidence, largest confidence, the column- and row-weighted sums, the cell's
    column and row (-1 when off the heatmap), 0, 0; ``size`` the heatmap's (width, height)."""

    sums: np.ndarray
    kernel_size: int
    size: tuple[int, int]


def _cells(xyz: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore"):  # a NaN landmark is left as it is, as one outside the heatmap
        col, row = np.trunc(xyz[:, 0] * width), np.trunc(xyz[:, 1] * height)
        inside = (col >= 0) & (col < width) & (row >= 0) & (row < height)
    return col, row, inside


def _refined(landmarks: LandmarkList, xyz: np.ndarray, inside: np.ndarray, sums: tuple[np.ndarray, ...],
             size: tuple[int, int], options: RefineLandmarksFromHeatmapOptions) -> LandmarkList:
    """The landmarks from each window's (total, best, column-weighted, row-weighted) sums."""
    total, best, col_sum, row_sum = sums
    width, height = size
    _, vis, pres = landmarks.columns()
    refine = inside & (best >= options.min_confidence_to_refine) & (total > 0)
    safe = np.where(total > 0, total, 1.0)
    out = xyz.copy()
    out[refine, 0] = (col_sum / width / safe)[refine]
    out[refine, 1] = (row_sum / height / safe)[refine]
    capped = inside & (total > 0)
    if options.refine_presence and pres is not None:
        pres = tuple(min(p, float(b)) if c and p is not None else p for p, b, c in zip(pres, best, capped, strict=True))
    if options.refine_visibility and vis is not None:
        vis = tuple(min(v, float(b)) if c and v is not None else v for v, b, c in zip(vis, best, capped, strict=True))
    return LandmarkList.from_arrays(out, vis, pres)


def refine_landmarks(landmarks: LandmarkList, heatmap: np.ndarray,
                     options: RefineLandmarksFromHeatmapOptions = RefineLandmarksFromHeatmapOptions()) -> LandmarkList:
    """Refine ``landmarks`` (relative to the model input) with an (H, W, N) or (1, H, W, N) heatmap."""
    hm = np.asarray(heatmap, np.float32)
    if hm.ndim == 4:
        if hm.shape[0] != 1:
            raise PipelineValueError(f"RefineLandmarksFromHeatmap: expected batch 1, got heatmap shape {hm.shape}")
        hm = hm[0]
    if hm.ndim != 3 or hm.shape[2] != len(landmarks):
        raise PipelineValueError(f"RefineLandmarksFromHeatmap: heatmap shape {hm.shape} does not have one channel "
                                 f"per landmark ({len(landmarks)})")
    height, width, n = hm.shape
    off = (options.kernel_size - 1) // 2
    xyz = landmarks.columns()[0]
    col, row, inside = _cells(xyz, width, height)
    # every landmark's window at once; cells beyond the heatmap get confidence 0
    steps = np.arange(-off, off + 1)
    rows = np.where(inside, row, 0).astype(np.intp)[:, None] + steps  # (n, k) cell indices
    cols = np.where(inside, col, 0).astype(np.intp)[:, None] + steps
    row_in, col_in = (rows >= 0) & (rows < height), (cols >= 0) & (cols < width)
    logits = hm[np.clip(rows, 0, height - 1)[:, :, None], np.clip(cols, 0, width - 1)[:, None, :],
                np.arange(n)[:, None, None]].astype(np.float64)
    with np.errstate(over="ignore"):
        conf = 1.0 / (1.0 + np.exp(-logits))  # (n, k, k)
    conf *= row_in[:, :, None] & col_in[:, None, :]
    sums = (conf.sum(axis=(1, 2)), conf.max(axis=(1, 2)), (cols[:, None, :] * conf).sum(axis=(1, 2)),
            (rows[:, :, None] * conf).sum(axis=(1, 2)))
    return _refined(landmarks, xyz, inside, sums, (width, height), options)


def refine_from_windows(landmarks: LandmarkList, windows: HeatmapWindows,
                        options: RefineLandmarksFromHeatmapOptions = RefineLandmarksFromHeatmapOptions()
                        ) -> LandmarkList:
    """:func:`refine_landmarks` from the GPU's window sums: the same rule, the sums in float32.
    The GPU took each landmark's cell from the model's landmark tensor; they must be the cells
    of ``landmarks`` (else the two nodes are configured for different tensors or sizes)."""
    sums = np.asarray(windows.sums, np.float64)
    if sums.shape != (len(landmarks), 8):
        raise PipelineValueError(f"RefineLandmarksFromHeatmap: window sums of shape {sums.shape} for "
                                 f"{len(landmarks)} landmarks (expected ({len(landmarks)}, 8))")
    if windows.kernel_size != options.kernel_size:
        raise PipelineValueError(f"RefineLandmarksFromHeatmap: kernel_size {options.kernel_size}, but the GPU summed "
                                 f"{windows.kernel_size}x{windows.kernel_size} windows (Inference's heatmap_windows)")
    xyz = landmarks.columns()[0]
    col, row, inside = _cells(xyz, *windows.size)
    moved = inside & ((sums[:, 4] != col) | (sums[:, 5] != row))
    if moved.any():
        i = int(np.flatnonzero(moved)[0])
        raise PipelineValueError(f"RefineLandmarksFromHeatmap: landmark {i} lies in heatmap cell "
                                 f"({int(col[i])}, {int(row[i])}) but the GPU summed the window of cell "
                                 f"({int(sums[i, 4])}, {int(sums[i, 5])}): the landmarks and Inference's "
                                 f"heatmap_windows come from different tensors or input sizes")
    return _refined(landmarks, xyz, inside, (sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]), windows.size, options)


@register_calculator
class RefineLandmarksFromHeatmap(Calculator):
    """Landmarks + heatmap tensor -> refined landmarks; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList, "TENSORS": list}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    optional_ports = frozenset({"TENSORS"})
    options = RefineLandmarksFromHeatmapOptions

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            return
        tensors = cc.inputs.get("TENSORS")
        if not tensors:  # MediaPipe passes the landmarks through when the heatmap is missing
            cc.output("NORM_LANDMARKS", lms)
            return
        if isinstance(tensors[0], HeatmapWindows):  # summed on the GPU
            cc.output("NORM_LANDMARKS", refine_from_windows(lms, tensors[0], cc.options))
        else:
            cc.output("NORM_LANDMARKS", refine_landmarks(lms, host_array(tensors[0]), cc.options))
