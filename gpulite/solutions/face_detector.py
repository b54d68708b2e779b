"""``FaceDetector``: BlazeFace face detection, MediaPipe's ``mp.solutions.face_detection`` on gpulite.

Runs the shipped graph ``face_detection`` (short range, ``model="short"``: faces within ~2 m,
MediaPipe's ``model_selection=0``) or ``face_detection_full_range`` (``model="full"``: the
sparse full-range model, ~5 m, ``model_selection=1``) with MediaPipe's options. Every image
is processed on its own (face detection does not track).

``min_detection_confidence`` becomes the decoder's ``min_score_thresh``. Left at None, each
model keeps its graph's own threshold, 0.5 short range and 0.6 full range: what MediaPipe
0.10.14's Python ``FaceDetection`` actually uses whatever it is given (it ignores the
argument, google-ai-edge/mediapipe issue #3896), so the defaults give MediaPipe's results.

Usage::

    import numpy as np
    from PIL import Image
    from gpulite.solutions import FaceDetector

    rgb = np.asarray(Image.open("photo.jpg").convert("RGB"))
    with FaceDetector(model="short", min_detection_confidence=0.5) as fd:
        result = fd.process(rgb)
    for d in result.detections or []:
        box = d.relative_bounding_box                 # xmin, ymin, width, height in [0, 1]
        print(d.score, box.xmin, box.ymin, box.width, box.height, d.keypoints[2])  # nose tip

MediaPipe code reads the same through ``d.location_data.relative_bounding_box`` and
``d.score[0]`` (``d.score`` is a float that also indexes). MediaPipe's own class name and
arguments, ``FaceDetection(min_detection_confidence, model_selection)``, are in
:mod:`gpulite.solutions.face_detection`.
"""

from __future__ import annotations

import logging

import numpy as np

from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import GraphSession, Solution, check_choice, check_confidence, set_options
from gpulite.solutions.results import Detection, FaceDetectionResult

log = logging.getLogger(__name__)

# model -> (graph, node whose min_score_thresh is min_detection_confidence, that graph's own threshold)
GRAPHS = {"short": ("face_detection", "TensorsToDetections", 0.5),
          "full": ("face_detection_full_range", "decode", 0.6)}


class FaceDetector(Solution):
    """Face detection (BlazeFace); see the module docstring.

    Parameters
    ----------
    model : {"short", "full"}
        Short range (faces within ~2 m) or full range (~5 m; sparse model, 192x192 input).
    min_detection_confidence : float or None
        Detections scoring below this are dropped. None: the model's own threshold (0.5 short
        range, 0.6 full range), which is what MediaPipe 0.10.14 applies.
    backend : {"cpu", "webgpu", "auto"} or None
        Where the graph runs (None: automatic).

    Examples
    --------
    >>> with FaceDetector(backend="cpu") as fd:
    ...     faces = fd.process(rgb).detections or []
    ...     print(fd.last_timings)          # ms per stage: ImageToTensor, Inference, ..., total
    """

    def __init__(self, *, model: str = "short", min_detection_confidence: float | None = None,
                 backend: str | None = None) -> None:
        self.model = check_choice(model, "model", tuple(GRAPHS))
        graph, decoder, default = GRAPHS[model]
        self.min_detection_confidence = check_confidence(
            default if min_detection_confidence is None else min_detection_confidence, "min_detection_confidence")
        super().__init__(backend=backend, static_image_mode=True)
        cfg = set_options(load_config(graph), {f"{decoder}.min_score_thresh": self.min_detection_confidence})
        self._session = GraphSession(cfg, backend=self.backend, outputs=["detections"],
                                     num_threads=self.inference_threads)

    def _result(self, image: np.ndarray, out: dict) -> FaceDetectionResult:
        dets = [Detection.from_pipeline(d) for d in out["detections"] or []]
        return FaceDetectionResult(dets or None, image_size=(image.shape[1], image.shape[0]))

    def _reset(self) -> None:  # no tracking state; the graph restarts so the clock can restart
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
