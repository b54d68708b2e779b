"""NON_MAX_SUPPRESSION_V4/V5 and TFLite_Detection_PostProcess against LiteRT.

Boxes come in overlapping clusters so suppression really happens; the ``tied`` cases round
scores to a few levels, so the order in which LiteRT's heaps leave equal scores decides
which boxes come out.
"""

from __future__ import annotations

import pathlib
import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import ModelError, UnsupportedOpError
from gpulite.model.custom_options import DetectionPostProcessOptions
from gpulite.model.opdefs import Op
from gpulite.model.reader import load
from gpulite.testing.tflite_writer import ModelBuilder
from tests.compare import assert_same
from tests.ops.harness import check_op, run_gpulite, run_litert


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


def _boxes(rng: np.random.Generator, n: int, *, flip: bool = True) -> np.ndarray:
    """``n`` boxes [y1, x1, y2, x2] around 4 cluster centres; with ``flip`` some have their corners swapped."""
    centres = rng.uniform(0.2, 0.8, (4, 2))[rng.integers(0, 4, n)] + rng.normal(0, 0.03, (n, 2))
    size = rng.uniform(0.05, 0.3, (n, 2))
    b = np.concatenate([centres - size / 2, centres + size / 2], axis=1)
    if flip:
        swap = rng.random(n) < 0.3
        b[swap] = b[swap][:, [2, 3, 0, 1]]
    return b.astype(np.float32)


def _scores(rng: np.random.Generator, n: int, tied: bool) -> np.ndarray:
    s = rng.random(n)
    return (np.round(s * 4) / 4 if tied else s).astype(np.float32)


def _nms_model(n: int, max_out: int, iou: float, score_thr: float, sigma: float | None) -> bytes:
    mb = ModelBuilder()
    boxes, scores = mb.input("boxes", (n, 4), np.float32), mb.input("scores", (n,), np.float32)
    ins = [boxes, scores, mb.const("max_out", np.array(max_out, np.int32)),
           mb.const("iou", np.array(iou, np.float32)), mb.const("score_thr", np.array(score_thr, np.float32))]
    idx, count = mb.tensor("selected", (max_out,), np.int32), mb.tensor("count", (), np.int32)
    if sigma is None:
        mb.op("NON_MAX_SUPPRESSION_V4", ins, [idx, count])
        mb.output(idx, count)
    else:
        kept = mb.tensor("kept_scores", (max_out,), np.float32)
        mb.op("NON_MAX_SUPPRESSION_V5", [*ins, mb.const("sigma", np.array(sigma, np.float32))], [idx, kept, count])
        mb.output(idx, kept, count)
    return mb.build()


# (boxes, max_output_size, iou_threshold, score_threshold, tied scores)
NMS_CASES = {
    "basic": (40, 10, 0.5, 0.0, False),
    "more-outputs-than-boxes": (12, 20, 0.4, -1.0, False),
    "score-threshold": (50, 30, 0.6, 0.5, False),
    "tied": (60, 25, 0.5, 0.1, True),
    "iou-one": (30, 30, 1.0, 0.0, True),
    "none-pass": (10, 5, 0.5, 2.0, False),
}


@pytest.mark.parametrize("case", list(NMS_CASES))
def test_nms_v4(case: str, backend: str) -> None:
    n, max_out, iou, thr, tied = NMS_CASES[case]
    rng = _rng("v4", case)
    check_op(_nms_model(n, max_out, iou, thr, None), [_boxes(rng, n), _scores(rng, n, tied)], backend)


@pytest.mark.parametrize("sigma", [0.0, 0.2, 0.5, 2.0])
@pytest.mark.parametrize("case", ["basic", "score-threshold", "tied"])
def test_nms_v5_soft(case: str, sigma: float, backend: str) -> None:
    n, max_out, iou, thr, tied = NMS_CASES[case]
    rng = _rng("v5", case, sigma)
    check_op(_nms_model(n, max_out, iou, thr, sigma), [_boxes(rng, n), _scores(rng, n, tied)], backend)


@pytest.mark.parametrize("sigma", [None, 0.5])
def test_nms_zero_area_boxes(sigma: float | None, backend: str) -> None:
    """Degenerate boxes have IoU 0 with everything, themselves included (LiteRT's area <= 0 rule):
    a selected one goes back into LiteRT's queue and is selected again, filling the output."""
    rng = _rng("zero-area")
    b = _boxes(rng, 16)
    b[::3, 2] = b[::3, 0]
    check_op(_nms_model(16, 12, 0.3, 0.0, sigma), [b, _scores(rng, 16, False)], backend)


@pytest.mark.parametrize("name", ["nms_v4", "nms_v5"])
def test_converter_nms_model(name: str, backend: str) -> None:
    """``tf.image.non_max_suppression`` as the converter writes it: outputs stored with a placeholder
    shape [1] (signature [-1]) that the op's constant max_output_size resizes, as LiteRT's Prepare does."""
    rng = _rng("converted", name)
    model = (pathlib.Path(__file__).resolve().parents[1] / "data" / "ops" / f"{name}.tflite").read_bytes()
    check_op(model, [_boxes(rng, 50), _scores(rng, 50, False)], backend)


def test_nms_runtime_max_output_size_is_refused() -> None:
    mb = ModelBuilder()
    ins = [mb.input("boxes", (4, 4), np.float32), mb.input("scores", (4,), np.float32),
           mb.input("max_out", (), np.int32), mb.const("iou", np.array(0.5, np.float32)),
           mb.const("thr", np.array(0.0, np.float32))]
    idx, count = mb.tensor("selected", (4,), np.int32), mb.tensor("count", (), np.int32)
    mb.op("NON_MAX_SUPPRESSION_V4", ins, [idx, count])
    mb.output(idx, count)
    with pytest.raises(UnsupportedOpError, match="max_output_size is computed at run time") as e:
        Interpreter(model_content=mb.build(), backend="cpu").allocate_tensors()
    assert e.value.op == "NON_MAX_SUPPRESSION_V4" and e.value.node_index == 0


# -- TFLite_Detection_PostProcess ---------------------------------------------------------------
def _postprocess_model(n: int, classes_in: int, options: dict, *, quant: bool, anchors: np.ndarray) -> bytes:
    from flatbuffers import flexbuffers

    mb = ModelBuilder()
    q = {"quant": (0.05, 128)} if quant else {}
    dt = np.uint8 if quant else np.float32
    enc = mb.input("box_encodings", (1, n, 4), dt, **q)
    cls = mb.input("class_predictions", (1, n, classes_in), dt, **({"quant": (1 / 255, 0)} if quant else {}))
    anc = mb.const("anchors", anchors, **({"quant": (1 / 255, 0)} if quant else {}))
    m = options["max_detections"] * options["max_classes_per_detection"]
    outs = [mb.tensor("boxes", (1, m, 4), np.float32), mb.tensor("classes", (1, m), np.float32),
            mb.tensor("scores", (1, m), np.float32), mb.tensor("count", (1,), np.float32)]
    mb.custom_op("TFLite_Detection_PostProcess", [enc, cls, anc], outs,
                 custom_options=flexbuffers.Dumps(options))
    mb.output(*outs)
    return mb.build()


def _options(**over) -> dict:
    base = {"max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 100,
            "use_regular_nms": False, "nms_score_threshold": 0.3, "nms_iou_threshold": 0.5, "num_classes": 4,
            "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}
    return {**base, **over}


# name: (options, background class, quantized)
POSTPROCESS_CASES = {
    "fast": (_options(), True, False),
    "fast-3-classes-per-box": (_options(max_classes_per_detection=3, max_detections=6), True, False),
    "fast-more-classes-than-exist": (_options(max_classes_per_detection=5, num_classes=3, max_detections=4), False,
                                     False),
    "regular": (_options(use_regular_nms=True, detections_per_class=4), True, False),
    "regular-no-background": (_options(use_regular_nms=True, detections_per_class=3, max_detections=7), False, False),
    "regular-one-detection": (_options(use_regular_nms=True, max_detections=1), True, False),
    "regular-high-threshold": (_options(use_regular_nms=True, nms_score_threshold=0.9), True, False),
    "fast-uint8": (_options(max_classes_per_detection=2, nms_score_threshold=0.2), True, True),
    "fast-uint8-tied-classes": (_options(max_classes_per_detection=4, num_classes=7, nms_score_threshold=0.1), True,
                                True),
    "regular-uint8": (_options(use_regular_nms=True, detections_per_class=5, nms_iou_threshold=0.3), True, True),
}


# SSD-sized: more candidates than single-class NMS compares pairwise up front (each kept box is
# then compared with the rest as it is kept)
POSTPROCESS_CASES["fast-many-boxes"] = (_options(max_detections=50, num_classes=20, nms_score_threshold=0.05), True,
                                        False)
POSTPROCESS_CASES["regular-many-boxes"] = (_options(use_regular_nms=True, max_detections=40, num_classes=3,
                                                    detections_per_class=30, nms_score_threshold=0.01), True, False)


@pytest.mark.parametrize("case", list(POSTPROCESS_CASES))
def test_detection_postprocess(case: str, backend: str) -> None:
    options, background, quant = POSTPROCESS_CASES[case]
    rng = _rng("postprocess", case)
    n, classes_in = 900 if "many" in case else 48, options["num_classes"] + background
    centres = rng.uniform(0.2, 0.8, (6, 2))[rng.integers(0, 6, n)]
    anchors = np.concatenate([centres, rng.uniform(0.1, 0.4, (n, 2))], axis=1).astype(np.float32)  # y, x, h, w
    enc = rng.normal(0, 2, (1, n, 4)).astype(np.float32)
    scores = rng.random((1, n, classes_in)).astype(np.float32)
    if quant:
        anchors = np.round(anchors * 255).astype(np.uint8)
        enc = np.clip(np.round(enc / 0.05) + 128, 0, 255).astype(np.uint8)
        levels = 64 if "tied" in case else 16
        scores = np.round(scores * 255).astype(np.uint8) // levels * levels  # few levels: many tied scores
    model = _postprocess_model(n, classes_in, options, quant=quant, anchors=anchors)
    expected = _written(run_litert(model, [enc, scores]), options)
    actual = run_gpulite(model, [enc, scores], backend)
    assert_same(actual[3], expected[3], rtol=0, what="num_detections")
    for i in range(3):  # gpulite zeroes the slots past the detections
        assert_same(actual[i], expected[i], rtol=1e-6, what=f"output {i} ({backend})")


def _written(outputs: list[np.ndarray], options: dict) -> list[np.ndarray]:
    """LiteRT's outputs with the slots its fast NMS leaves unwritten (past the detections, and past
    ``num_classes`` classes per box) set to 0; regular NMS zeroes them itself."""
    if options["use_regular_nms"]:
        return outputs
    per_box, step = min(options["max_classes_per_detection"], options["num_classes"]), \
        options["max_classes_per_detection"]
    written = np.zeros(outputs[1].shape[1], bool)
    for k in range(int(outputs[3][0])):
        written[k * step:k * step + per_box] = True
    for out in outputs[:3]:
        out[0, ~written] = 0
    return outputs


def test_detection_postprocess_options_decoded_at_load() -> None:
    options = _options(use_regular_nms=True)
    del options["detections_per_class"]  # LiteRT's Init defaults it to 100
    model = _postprocess_model(4, 5, options, quant=False, anchors=np.full((4, 4), 0.5, np.float32))
    node = load(model).subgraphs[0].operators[0]
    assert node.op == Op.TFLite_Detection_PostProcess
    assert node.options == DetectionPostProcessOptions(10, 1, 100, True, 0.3, 0.5, 4, 10.0, 10.0, 5.0, 5.0)


@pytest.mark.parametrize(("change", "message"), [
    ({"num_classes": None}, "expected key 'num_classes'"),
    ({"nms_iou_threshold": 0.0}, r"expected 'nms_iou_threshold' in \(0, 1\]"),
    ({"max_classes_per_detection": 0}, "expected 'max_classes_per_detection' >= 1"),
    ({"use_regular_nms": True, "max_detections": 0}, "expected 'max_detections' >= 1"),
    ({"y_scale": -1.0}, "expected 'y_scale' > 0"),
])
def test_detection_postprocess_bad_options_are_model_errors(change: dict, message: str) -> None:
    """Options LiteRT's Eval would fail on are refused when the model loads, naming the op."""
    options = {k: v for k, v in {**_options(), **change}.items() if v is not None}
    model = _postprocess_model(4, 5, options, quant=False, anchors=np.full((4, 4), 0.5, np.float32))
    with pytest.raises(ModelError, match=f"TFLite_Detection_PostProcess custom options: {message}"):
        Interpreter(model_content=model, backend="cpu")


def test_detection_postprocess_garbage_options_are_model_errors() -> None:
    """Truncated, empty or random option bytes: a ModelError naming the op, never another exception."""
    from flatbuffers import flexbuffers

    from gpulite.model.custom_options import decode_detection_postprocess

    good = flexbuffers.Dumps(_options())
    rng = _rng("garbage")
    blobs = [b"", None, good[:len(good) // 2], good[1:], bytes(rng.integers(0, 256, 64, dtype=np.uint8)),
             flexbuffers.Dumps([1, 2, 3]), flexbuffers.Dumps({**_options(), "max_detections": "ten"})]
    blobs += [bytes(b ^ (1 << int(rng.integers(8))) if i == k else b for i, b in enumerate(good))
              for k in rng.integers(0, len(good), 40)]
    for blob in blobs:
        try:
            decode_detection_postprocess(blob)
        except ModelError as e:
            assert str(e).startswith("TFLite_Detection_PostProcess custom options: "), e


def test_ssd_head_with_postprocess(backend: str) -> None:
    """An SSD-style head: 1x1 convs give box encodings and class logits per anchor, LOGISTIC
    scores them and TFLite_Detection_PostProcess decodes and selects (on webgpu the convs run
    on the GPU and the post-processing on the CPU fallback, across a crossing)."""
    rng = _rng("ssd-head")
    h = w = 6
    anchors_per_cell, classes = 2, 3
    n = h * w * anchors_per_cell
    mb = ModelBuilder()
    x = mb.input("features", (1, h, w, 8), np.float32)
    outs = []
    for name, k in (("boxes", 4), ("logits", classes + 1)):
        conv = mb.tensor(f"{name}_conv", (1, h, w, anchors_per_cell * k), np.float32)
        mb.op("CONV_2D", [x, mb.const(f"{name}_w", rng.normal(0, 0.3, (anchors_per_cell * k, 1, 1, 8)).astype(
            np.float32)), mb.const(f"{name}_b", np.zeros(anchors_per_cell * k, np.float32))], [conv], padding="SAME",
            stride_h=1, stride_w=1)
        flat = mb.tensor(name, (1, n, k), np.float32)
        mb.op("RESHAPE", [conv, mb.const(f"{name}_shape", np.array([1, n, k], np.int32))], [flat])
        outs.append(flat)
    scores = mb.tensor("scores", (1, n, classes + 1), np.float32)
    mb.op("LOGISTIC", [outs[1]], [scores])
    ys, xs = np.meshgrid((np.arange(h) + 0.5) / h, (np.arange(w) + 0.5) / w, indexing="ij")
    centres = np.repeat(np.stack([ys.ravel(), xs.ravel()], 1), anchors_per_cell, axis=0)
    anchors = np.concatenate([centres, np.tile([[0.2, 0.2], [0.35, 0.15]], (h * w, 1))], 1).astype(np.float32)
    options = _options(max_detections=6, num_classes=classes, use_regular_nms=True, nms_score_threshold=0.4)
    det = [mb.tensor("det_boxes", (1, 6, 4), np.float32), mb.tensor("det_classes", (1, 6), np.float32),
           mb.tensor("det_scores", (1, 6), np.float32), mb.tensor("num", (1,), np.float32)]
    from flatbuffers import flexbuffers

    mb.custom_op("TFLite_Detection_PostProcess", [outs[0], scores, mb.const("anchors", anchors)], det,
                 custom_options=flexbuffers.Dumps(options))
    mb.output(*det)
    check_op(mb.build(), [rng.standard_normal((1, h, w, 8)).astype(np.float32)], backend, rtol=1e-5)
