"""DetectionProjection: map detections from tensor coordinates back onto the image.

MediaPipe's ``DetectionProjectionCalculator``: keypoints go through the transform; the box's
four corners do too, and the new box is their axis-aligned bounding rectangle. With the
letterbox of ``ImageToTensor(keep_aspect_ratio=True)`` this removes the padding (what
``DetectionLetterboxRemovalCalculator`` did in older graphs); with a rotated region it gives
the upright box around the rotated one.

Usage::

    - calculator: DetectionProjection
      input_stream: ["DETECTIONS:detections", "PROJECTION_MATRIX:transform"]
      output_stream: "DETECTIONS:image_detections"
"""

from __future__ import annotations

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import Detection, ImageTransform, RelativeBox
from gpulite.pipeline.registry import register_calculator


def project_detections(detections: list[Detection], transform: ImageTransform) -> list[Detection]:
    """Every detection's box and keypoints mapped through ``transform`` (tensor -> image, relative)."""
    out = []
    for d in detections:
        b = d.box
        pts = np.array([(b.xmin, b.ymin), (b.xmax, b.ymin), (b.xmax, b.ymax), (b.xmin, b.ymax), *d.keypoints],
                       np.float64)
        p = transform.apply(pts)
        x0, y0 = p[:4, 0].min(), p[:4, 1].min()
        x1, y1 = p[:4, 0].max(), p[:4, 1].max()
        kps = tuple((float(x), float(y)) for x, y in p[4:])
        out.append(Detection(RelativeBox(float(x0), float(y0), float(x1 - x0), float(y1 - y0)), kps,
                             d.score, d.label_id))
    return out


@register_calculator
class DetectionProjection(Calculator):
    """Detections in tensor coordinates + the tensor's transform -> detections on the image.

    Usage::

        - calculator: DetectionProjection
          input_stream: ["DETECTIONS:detections", "PROJECTION_MATRIX:transform"]
          output_stream: "DETECTIONS:image_detections"
    """

    inputs = {"DETECTIONS": list, "PROJECTION_MATRIX": ImageTransform}
    outputs = {"DETECTIONS": list}

    def process(self, cc) -> None:
        dets, transform = cc.inputs["DETECTIONS"], cc.inputs["PROJECTION_MATRIX"]
        if dets is None:
            return
        if transform is None:
            raise ValueError(f"node {cc.node_name!r}: DETECTIONS at timestamp {cc.timestamp} came without a "
                             "PROJECTION_MATRIX at the same timestamp")
        cc.output("DETECTIONS", project_detections(dets, transform))
