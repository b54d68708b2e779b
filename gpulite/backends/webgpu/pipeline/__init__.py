"""GPU compute for the pipeline calculators (``gpulite.pipeline.calculators``).

The calculators call these through a small API and never import ``wgpu`` themselves:

- :class:`ImageToTensorGpu` — frame upload, warp, letterbox and normalisation into a GPU tensor;
- :class:`DetectionDecoderGpu` — anchor decoding and score thresholding, reading back only
  the candidates;
- :func:`copy_tensors` — GPU-side copies of an interpreter's outputs into buffers a packet owns;
  :func:`copy_and_read` — some kept so, the others read back, in one submit (with GPU work
  recorded before the readback, whose small results come back in the same mapping);
- :class:`~.masks.MaskGpu` — a region's mask projected onto the image and smoothed (pose);
- :class:`~.heatmap.HeatmapWindowsGpu` — pose's heatmap refinement windows summed, recorded into
  the submit :func:`copy_and_read` reads the landmarks in;
- :class:`DeviceTensor` — such a tensor; :func:`transfer_stats` / :func:`record_transfer` — the
  host<->GPU byte counters of a graph.

Shaders live next to this file (``*.wgsl``); pipelines are cached on the device.
"""

from .common import (
    DeviceTensor,
    copy_and_read,
    copy_tensors,
    read_back,
    record_transfer,
    shared_device,
    transfer_stats,
)
from .detections import DetectionDecoderGpu
from .image_to_tensor import ImageToTensorGpu

__all__ = ["DetectionDecoderGpu", "DeviceTensor", "ImageToTensorGpu", "copy_and_read", "copy_tensors", "read_back",
           "record_transfer", "shared_device", "transfer_stats"]
