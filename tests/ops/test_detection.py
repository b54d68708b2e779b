"""NON_MAX_SUPPRESSION_V4/V5 and TFLite_Detection_PostProcess against LiteRT.

Boxes come in overlapping clusters so suppression really happens; the ``tied`` cases round
scores to a few levels, so the order in which LiteRT's heaps leave equal scores decides
which boxes come out.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.errors import UnsupportedOpError
from gpulite.testing.tflite_writer import ModelBuilder
from tests.ops.harness import check_op


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


def test_nms_zero_area_boxes(backend: str) -> None:
    """Degenerate boxes have IoU 0 with everything (LiteRT's area <= 0 rule)."""
    rng = _rng("zero-area")
    b = _boxes(rng, 16)
    b[::3, 2] = b[::3, 0]
    check_op(_nms_model(16, 12, 0.3, 0.0, 0.5), [b, _scores(rng, 16, False)], backend)


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
