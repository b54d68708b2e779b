"""TensorsToDetections' GPU path: score and decode every anchor with ``decode_detections.wgsl``.

Only the anchors that pass the score threshold come back: a 16-byte counter and a compact list
of decoded records, read through one mapped staging buffer. The first read takes the counter
and room for ``first_read`` records (1,840 bytes for BlazeFace, counted whole); a second read
fetches the rest only when more anchors passed.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import wgpu

from ..requirements import Need, check_device
from .common import COUNTERS, compute_pipeline, shared_device

_WG = 64
_HEADER = 16  # the counter, padded


class DetectionDecoderGpu:
    """Decodes (regressors, scores) GPU tensors against fixed anchors; one per calculator node.

    Parameters
    ----------
    anchors : numpy.ndarray
        (num_boxes, 4) x_center, y_center, w, h; uploaded once.
    options : TensorsToDetectionsOptions
        The calculator's options (``ignore_classes`` is not supported here).
    first_read : int
        Records fetched with the counter in the first readback.
    """

    def __init__(self, anchors: np.ndarray, options: Any, *, device: Any = None, first_read: int = 24) -> None:
        o = options
        if o.ignore_classes:
            raise NotImplementedError("ignore_classes is decoded on the cpu only")
        self.gdev = gdev = shared_device(device)
        self.pipeline = compute_pipeline(gdev, "decode_detections")
        self.options, self.first_read = o, first_read
        self.num_boxes = o.num_boxes
        self.stride = 7 + 2 * o.num_keypoints  # words per record
        records = self.num_boxes * self.stride * 4
        check_device(gdev, [
            Need("max-buffer-size", _HEADER + records, "the staging buffer of the decoded records"),
            Need("max-storage-buffer-binding-size", records, "the decoded records"),
            Need("max-storage-buffer-binding-size", self.num_boxes * 16, "the anchors"),
            Need("max-compute-workgroups-per-dimension", -(-self.num_boxes // _WG), "the decode dispatch"),
        ], what=f"TensorsToDetections on {self.num_boxes} boxes", hint="fewer boxes, or use backend='cpu'")
        dev = gdev.device
        with gdev.guard("DetectionDecoderGpu"):
            a = np.ascontiguousarray(anchors, np.float32)
            self.anchors = dev.create_buffer_with_data(label="gpulite.pipeline.anchors", data=a.tobytes(),
                                                       usage=wgpu.BufferUsage.STORAGE)
            COUNTERS.add(uploaded=a.nbytes)
            self.count = dev.create_buffer(label="gpulite.pipeline.det_count", size=_HEADER,
                                           usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                                           | wgpu.BufferUsage.COPY_DST)
            self.records = dev.create_buffer(label="gpulite.pipeline.det_records",
                                             size=self.num_boxes * self.stride * 4,
                                             usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
            self.staging = dev.create_buffer(label="gpulite.pipeline.det_staging",
                                             size=_HEADER + self.num_boxes * self.stride * 4,
                                             usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            self.params = dev.create_buffer(label="gpulite.pipeline.det_params", size=80,
                                            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        self._last_params = b""

    def _params(self, reg_off: int, score_off: int) -> bytes:
        o = self.options
        flags = ((1 if o.reverse_output_order else 0) | (2 if o.apply_exponential_on_box_size else 0)
                 | (4 if o.sigmoid_score else 0) | (8 if o.score_clipping_thresh is not None else 0)
                 | (16 if o.min_score_thresh is not None else 0))
        return struct.pack("<4I4I4I4f4f", o.num_boxes, o.num_coords, o.num_classes, o.num_keypoints,
                           reg_off, score_off, o.box_coord_offset, o.keypoint_coord_offset,
                           o.num_values_per_keypoint, flags, self.stride, 0,
                           o.x_scale, o.y_scale, o.w_scale, o.h_scale,
                           o.score_clipping_thresh or 0.0, o.min_score_thresh or 0.0, 0.0, 0.0)

    def _read(self, offset: int, nbytes: int) -> np.ndarray:
        self.staging.map_sync(wgpu.MapMode.READ, offset, nbytes)
        try:
            return np.frombuffer(self.staging.read_mapped(offset, nbytes, copy=True), np.uint8)
        finally:
            self.staging.unmap()

    def run(self, regressors: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Decode; returns (anchor index, score, class, decoded rows) of the passing anchors, by anchor.

        ``decoded`` rows are ymin, xmin, ymax, xmax, then (x, y) per keypoint, as
        ``tensors_to_detections.decode_boxes`` gives them.
        """
        gdev, dev = self.gdev, self.gdev.device
        for t in (regressors, scores):
            if t.offset % 4 or t.dtype != np.float32:
                raise ValueError(f"DetectionDecoderGpu: expected float32 tensors at 4-byte offsets, got {t!r}")
        params = self._params(regressors.offset // 4, scores.offset // 4)
        rec_bytes = self.stride * 4
        with gdev.guard("TensorsToDetections (webgpu)"):
            if params != self._last_params:
                gdev.queue.write_buffer(self.params, 0, params)
                COUNTERS.add(uploaded=len(params))
                self._last_params = params
            bg = dev.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": regressors.buffer, "offset": 0, "size": regressors.buffer.size}},
                {"binding": 1, "resource": {"buffer": scores.buffer, "offset": 0, "size": scores.buffer.size}},
                {"binding": 2, "resource": {"buffer": self.anchors, "offset": 0, "size": self.anchors.size}},
                {"binding": 3, "resource": {"buffer": self.count, "offset": 0, "size": _HEADER}},
                {"binding": 4, "resource": {"buffer": self.records, "offset": 0, "size": self.records.size}},
                {"binding": 5, "resource": {"buffer": self.params, "offset": 0, "size": 80}},
            ])
            enc = dev.create_command_encoder(label="gpulite.pipeline.decode_detections")
            enc.clear_buffer(self.count, 0, _HEADER)
            cp = enc.begin_compute_pass()
            cp.set_pipeline(self.pipeline)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(-(-self.num_boxes // _WG), 1, 1)
            cp.end()
            first = min(self.first_read, self.num_boxes) * rec_bytes
            enc.copy_buffer_to_buffer(self.count, 0, self.staging, 0, _HEADER)
            enc.copy_buffer_to_buffer(self.records, 0, self.staging, _HEADER, first)
            gdev.queue.submit([enc.finish()])
            head = self._read(0, _HEADER + first)
            n = int(head[:4].view(np.uint32)[0])
            got = min(n, self.first_read) * rec_bytes
            raw = head[_HEADER:_HEADER + got]
            moved = _HEADER + first  # what crossed into the mapped staging buffer, used or not
            if n > self.first_read:  # more than the first read holds: fetch the rest
                rest = (n - self.first_read) * rec_bytes
                enc = dev.create_command_encoder(label="gpulite.pipeline.decode_detections.rest")
                enc.copy_buffer_to_buffer(self.records, first, self.staging, _HEADER + first, rest)
                gdev.queue.submit([enc.finish()])
                raw = np.concatenate([raw, self._read(_HEADER + first, rest)])
                moved += rest
        COUNTERS.add(read_back=moved)
        rec = raw.view(np.float32).reshape(n, self.stride)
        idx = rec[:, 0].view(np.uint32).astype(np.int64)
        order = np.argsort(idx, kind="stable")  # the atomic slots come in any order: restore anchor order
        rec, idx = rec[order], idx[order]
        return idx, rec[:, 1].copy(), rec[:, 2].view(np.uint32).astype(np.int64), rec[:, 3:].copy()
