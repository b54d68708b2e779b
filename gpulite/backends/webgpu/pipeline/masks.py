"""Masks on the GPU: a region's mask projected onto the image (``SegmentationProjection``) and
blended with the previous frame's (``SegmentationSmoothing``), so Pose's segmentation mask stays
on the GPU until it is read.

:meth:`MaskGpu.project` is ``cv2.warpAffine`` with ``WARP_INVERSE_MAP``, bilinear, zero border,
in OpenCV's fixed point (``mask_projection.wgsl``), applying the tensor's activation (sigmoid)
to each tap; :meth:`MaskGpu.smooth` is ``segmentation_smoothing.smooth_mask``
(``mask_smoothing.wgsl``). Each is one dispatch and one submit; each returns a
:class:`~.common.DeviceTensor` (1, H, W, 1) float32 of its own and reads nothing back.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .common import COUNTERS, STORAGE_OUT, DeviceTensor, compute_pipeline, shared_device

_WG = 64


def _binding(i: int, t: Any) -> dict[str, Any]:
    return {"binding": i, "resource": {"buffer": t.buffer, "offset": t.offset, "size": -(-t.nbytes // 4) * 4}}


class MaskGpu:
    """Projection and smoothing of float32 masks on one device (pipelines cached on it)."""

    def __init__(self, device: Any = None) -> None:
        import wgpu

        self.gdev = shared_device(device)
        self._uniform = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST

    def _dispatch(self, name: str, tensors: list[Any], params: bytes, n: int, shape: tuple[int, ...]) -> DeviceTensor:
        gdev = self.gdev
        with gdev.guard(f"{name} (webgpu)"):
            pipeline = compute_pipeline(gdev, name)
            out = gdev.device.create_buffer(label=f"gpulite.pipeline.{name}", size=max(4, n * 4), usage=STORAGE_OUT)
            ubuf = gdev.device.create_buffer(label=f"gpulite.pipeline.{name}.params", size=len(params),
                                             usage=self._uniform)
            gdev.queue.write_buffer(ubuf, 0, params)
            COUNTERS.add(uploaded=len(params))
            entries = [_binding(i, t) for i, t in enumerate(tensors)]
            entries.append({"binding": len(tensors), "resource": {"buffer": out, "offset": 0, "size": out.size}})
            entries.append({"binding": len(tensors) + 1,
                            "resource": {"buffer": ubuf, "offset": 0, "size": len(params)}})
            bg = gdev.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
            enc = gdev.device.create_command_encoder(label=f"gpulite.pipeline.{name}")
            cp = enc.begin_compute_pass()
            cp.set_pipeline(pipeline)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(-(-n // _WG), 1, 1)
            cp.end()
            gdev.queue.submit([enc.finish()])
        return DeviceTensor(gdev, out, 0, shape)

    def project(self, mask: Any, a: np.ndarray, out_w: int, out_h: int, *, sigmoid: bool) -> DeviceTensor:
        """``mask`` (a GPU tensor, (1, h, w, 1) float32) sampled by the 2x3 inverse map ``a`` (image
        pixel -> mask pixel) into an (1, out_h, out_w, 1) mask; ``sigmoid``: the values are logits."""
        h, w = int(mask.shape[-3]), int(mask.shape[-2])
        a = np.asarray(a, np.float32)
        params = struct.pack("<4f4f4I4I", a[0, 0], a[0, 1], a[0, 2], 0.0, a[1, 0], a[1, 1], a[1, 2], 0.0,
                             w, h, 1 if sigmoid else 0, 0, out_w, out_h, 0, 0)
        return self._dispatch("mask_projection", [mask], params, out_w * out_h, (1, out_h, out_w, 1))

    def smooth(self, current: Any, previous: Any, ratio: float) -> DeviceTensor:
        """``current + (previous - current) * uncertainty(current) * ratio`` of two same-shape masks."""
        n = int(np.prod(current.shape))
        params = struct.pack("<If2I", n, float(ratio), 0, 0)
        return self._dispatch("mask_smoothing", [current, previous], params, n, tuple(current.shape))
