"""Write mediapipe 1.2.2's ImageClassifier, ObjectDetector and ImageEmbedder results on the test
photos to ``tests/data/tasks/metadata_tasks.json``, the oracle of ``tests/tasks/test_metadata_tasks.py``.

mediapipe 1.2.2 cannot share a venv with the test suite's mediapipe 0.10.14, so its outputs are
committed with this script, which runs in a venv of its own::

    python3 -m venv /tmp/mp122 && /tmp/mp122/bin/pip install mediapipe==1.2.2
    gpulite models pull efficientnet_lite0 efficientnet_lite0_int8 efficientdet_lite0_int8 face_landmarker
    /tmp/mp122/bin/python tools/make_tasks_metadata_oracle.py

It reads the photos from ``tests/data/images`` and the zoo models from the gpulite model cache
(``$GPULITE_CACHE_DIR/models``, default ``~/.cache/gpulite/models``), each checked against
``gpulite/data/SHA256SUMS``, and imports nothing from gpulite. The output is deterministic
(mediapipe's CPU path; floats rounded to 7 significant digits).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import mediapipe as mp
import numpy as np
from mediapipe.tasks import python
from mediapipe.tasks.python import vision
from mediapipe.tasks.python.components.containers import rect as rect_module

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ("astronaut.png", "chelsea.png", "coffee.png")
OUT = ROOT / "tests" / "data" / "tasks" / "metadata_tasks.json"

# Each case: (task, zoo model, options as JSON, image processing options as JSON or None).
CLASSIFIER_CASES = [
    ("efficientnet_lite0", {"max_results": 5}, None),
    ("efficientnet_lite0_int8", {"max_results": 5}, None),
    ("efficientnet_lite0", {"score_threshold": 0.02}, None),
    ("efficientnet_lite0", {"max_results": 3, "category_allowlist": ["tabby", "Egyptian cat", "cup", "espresso",
                                                                      "no such label"]}, None),
    ("efficientnet_lite0", {"max_results": 3, "category_denylist": ["espresso", "tabby"]}, None),
    ("efficientnet_lite0", {"max_results": 3}, {"rotation_degrees": 90}),
    ("efficientnet_lite0", {"max_results": 3}, {"region_of_interest": [0.1, 0.2, 0.7, 0.9]}),
]
DETECTOR_CASES = [
    ("efficientdet_lite0_int8", {"max_results": 5}, None),
    ("efficientdet_lite0_int8", {"score_threshold": 0.3}, None),
    ("efficientdet_lite0_int8", {"max_results": 3, "category_allowlist": ["cup", "cat", "person"]}, None),
    ("efficientdet_lite0_int8", {"max_results": 3, "category_denylist": ["dining table"]}, None),
    ("efficientdet_lite0_int8", {"max_results": 5}, {"rotation_degrees": 90}),
]
EMBEDDER_CASES = [
    ("efficientnet_lite0", {"l2_normalize": True}, None),
    ("efficientnet_lite0", {"quantize": True, "l2_normalize": True}, None),
    ("efficientnet_lite0_int8", {}, None),
]


def _cache() -> Path:
    return Path(os.environ.get("GPULITE_CACHE_DIR") or Path.home() / ".cache" / "gpulite") / "models"


def _digests() -> dict[str, str]:
    out = {}
    for line in (ROOT / "gpulite" / "data" / "SHA256SUMS").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[1]] = parts[0]
    return out


def model(name: str) -> str:
    path = _cache() / f"{name}.tflite"
    want = _digests()[f"{name}.tflite"]
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != want:
        raise SystemExit(f"{path} is missing or not the zoo's {name} (sha256 {want}): run `gpulite models pull {name}`")
    return str(path)


def _f(x: float) -> float:
    return float(f"{x:.7g}")


def _ipo(spec: dict | None):
    if spec is None:
        return None
    roi = spec.get("region_of_interest")
    return vision.ImageProcessingOptions(
        region_of_interest=None if roi is None else rect_module.RectF(left=roi[0], top=roi[1], right=roi[2],
                                                                      bottom=roi[3]),
        rotation_degrees=spec.get("rotation_degrees", 0))


def _category(c) -> dict:
    return {"index": c.index, "score": _f(c.score), "category_name": c.category_name, "display_name": c.display_name}


def classify(name: str, options: dict, ipo: dict | None, image: mp.Image) -> dict:
    opts = vision.ImageClassifierOptions(base_options=python.BaseOptions(model_asset_path=model(name)), **options)
    with vision.ImageClassifier.create_from_options(opts) as task:
        r = task.classify(image, _ipo(ipo))
    return {"timestamp_ms": r.timestamp_ms, "classifications": [
        {"head_index": h.head_index, "head_name": h.head_name, "categories": [_category(c) for c in h.categories]}
        for h in r.classifications]}


def detect(name: str, options: dict, ipo: dict | None, image: mp.Image) -> dict:
    opts = vision.ObjectDetectorOptions(base_options=python.BaseOptions(model_asset_path=model(name)), **options)
    with vision.ObjectDetector.create_from_options(opts) as task:
        r = task.detect(image, _ipo(ipo))
    return {"detections": [
        {"bounding_box": [d.bounding_box.origin_x, d.bounding_box.origin_y, d.bounding_box.width,
                          d.bounding_box.height],
         "categories": [_category(c) for c in d.categories]} for d in r.detections]}


def embed(name: str, options: dict, ipo: dict | None, image: mp.Image) -> dict:
    opts = vision.ImageEmbedderOptions(base_options=python.BaseOptions(model_asset_path=model(name)), **options)
    with vision.ImageEmbedder.create_from_options(opts) as task:
        r = task.embed(image, _ipo(ipo))
    return {"timestamp_ms": r.timestamp_ms, "embeddings": [
        {"head_index": e.head_index, "head_name": e.head_name, "dtype": str(e.embedding.dtype),
         "values": [int(v) for v in e.embedding] if e.embedding.dtype == np.uint8 else
         [_f(v) for v in e.embedding]} for e in r.embeddings]}


def errors(images: dict, only: str | None = None) -> list[dict]:
    """What mediapipe raises (type, message) for bad models, options and calls."""
    coffee = images["coffee.png"]
    bundle = str(_cache() / "face_landmarker.task")

    def cls(**kw):
        base = python.BaseOptions(model_asset_path=kw.pop("path", None), model_asset_buffer=kw.pop("buffer", None))
        return vision.ImageClassifier.create_from_options(vision.ImageClassifierOptions(base_options=base, **kw))

    def det(**kw):
        base = python.BaseOptions(model_asset_path=kw.pop("path", None), model_asset_buffer=kw.pop("buffer", None))
        return vision.ObjectDetector.create_from_options(vision.ObjectDetectorOptions(base_options=base, **kw))

    def emb(**kw):
        base = python.BaseOptions(model_asset_path=kw.pop("path", None), model_asset_buffer=kw.pop("buffer", None))
        return vision.ImageEmbedder.create_from_options(vision.ImageEmbedderOptions(base_options=base, **kw))

    def video_twice():
        t = cls(path=model("efficientnet_lite0"), running_mode=vision.RunningMode.VIDEO)
        t.classify_for_video(coffee, 5)
        t.classify_for_video(coffee, 5)

    net, det_model = model("efficientnet_lite0"), model("efficientdet_lite0_int8")
    cases = {
        "classifier: no such file": lambda: cls(path="/nonexistent/model.tflite"),
        "classifier: no asset": lambda: cls(),
        "classifier: random bytes": lambda: cls(buffer=bytes(range(256)) * 64),
        "classifier: a .task bundle": lambda: cls(path=bundle),
        "classifier: max_results 0": lambda: cls(path=net, max_results=0),
        "classifier: allowlist and denylist": lambda: cls(path=net, category_allowlist=["cup"],
                                                          category_denylist=["espresso"]),
        "classifier: classify_for_video in IMAGE mode": lambda: cls(path=net).classify_for_video(coffee, 1),
        "classifier: classify in VIDEO mode": lambda: cls(path=net, running_mode=vision.RunningMode.VIDEO)
        .classify(coffee),
        "classifier: same timestamp twice": video_twice,
        "classifier: rotation 45": lambda: cls(path=net).classify(coffee, vision.ImageProcessingOptions(
            rotation_degrees=45)),
        "classifier: region outside [0, 1]": lambda: cls(path=net).classify(coffee, vision.ImageProcessingOptions(
            region_of_interest=rect_module.RectF(left=-0.1, top=0.0, right=0.5, bottom=0.5))),
        "detector: a classifier model": lambda: det(path=net),
        "detector: max_results 0": lambda: det(path=det_model, max_results=0),
        "detector: allowlist and denylist": lambda: det(path=det_model, category_allowlist=["cup"],
                                                        category_denylist=["cat"]),
        "detector: region of interest": lambda: det(path=det_model).detect(coffee, vision.ImageProcessingOptions(
            region_of_interest=rect_module.RectF(left=0.1, top=0.1, right=0.5, bottom=0.5))),
        "embedder: a .task bundle": lambda: emb(path=bundle),
        "embedder: embed_async in IMAGE mode": lambda: emb(path=net).embed_async(coffee, 1),
    }
    if only is not None:  # in a child process: run one case, print what it raised
        try:
            cases[only]()
            print(json.dumps({"case": only, "raises": None, "message": None}))
        except Exception as e:  # the oracle: whatever mediapipe raises
            print(json.dumps({"case": only, "raises": type(e).__name__, "message": str(e)}))
        sys.stdout.flush()
        os._exit(0)  # mediapipe's task threads can hang an orderly exit after an error
    out = []
    for what in cases:  # each in a process of its own, so that a hang stays one case's
        try:
            done = subprocess.run([sys.executable, __file__, "--error", what], capture_output=True, text=True,
                                  timeout=120, check=False)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
            out.append(json.loads(lines[-1]) if lines else {"case": what, "raises": "crash",
                                                             "message": done.stderr.strip()[-300:]})
        except subprocess.TimeoutExpired:
            out.append({"case": what, "raises": "hang", "message": "no answer in 120 s"})
    return out


def main() -> None:
    images = {n: mp.Image.create_from_file(str(ROOT / "tests" / "data" / "images" / n)) for n in IMAGES}
    if sys.argv[1:2] == ["--error"]:
        errors(images, sys.argv[2])
    cases = []
    for task, fn, table in (("classifier", classify, CLASSIFIER_CASES), ("detector", detect, DETECTOR_CASES),
                            ("embedder", embed, EMBEDDER_CASES)):
        for name, options, ipo in table:
            for image in IMAGES:
                cases.append({"task": task, "model": name, "options": options, "image_processing_options": ipo,
                              "image": image, "result": fn(name, options, ipo, images[image])})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {"mediapipe": mp.__version__, "made_by": "tools/make_tasks_metadata_oracle.py",
           "models": {n: _digests()[f"{n}.tflite"] for n in sorted({c["model"] for c in cases})}, "cases": cases,
           "errors": errors(images)}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases to {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
