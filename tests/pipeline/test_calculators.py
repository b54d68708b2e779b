"""Perception calculators: anchors, decoding, NMS, geometry, landmarks, masks, drawing, sources and sinks.

Expected values are computed here by hand or by an independent formula, never by the code
under test. WebGPU tests need an adapter (lavapipe in CI) and skip, loudly, only without one.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gpulite.pipeline import GraphBuilder
from gpulite.pipeline.calculators._opencv import cv2, untested
from gpulite.pipeline.calculators.annotation_overlay import AnnotationOverlayOptions, annotate
from gpulite.pipeline.calculators.detection_projection import project_detections
from gpulite.pipeline.calculators.detections_to_rects import DetectionsToRectsOptions, detection_to_rect
from gpulite.pipeline.calculators.image_to_tensor import (
    ImageToTensorOptions,
    image_to_tensor,
    opencv_projection,
    plan_transform,
    warp_to_tensor,
)
from gpulite.pipeline.calculators.landmarks_to_detection import LandmarksToDetectionOptions, landmarks_to_detection
from gpulite.pipeline.calculators.non_max_suppression import (
    NonMaxSuppressionOptions,
    non_max_suppression,
    overlap,
)
from gpulite.pipeline.calculators.rect_transformation import RectTransformationOptions, transform_rect
from gpulite.pipeline.calculators.refine_landmarks_from_heatmap import (
    RefineLandmarksFromHeatmapOptions,
    refine_landmarks,
)
from gpulite.pipeline.calculators.segmentation_projection import project_mask
from gpulite.pipeline.calculators.sinks import VideoWriter
from gpulite.pipeline.calculators.sources import SourceUnavailableError, VideoReader, open_camera
from gpulite.pipeline.calculators.ssd_anchors import SsdAnchorsOptions, generate_anchors
from gpulite.pipeline.calculators.tensors_to_detections import TensorsToDetectionsOptions, tensors_to_detections
from gpulite.pipeline.calculators.tensors_to_landmarks import (
    TensorsToLandmarksOptions,
    project_landmarks,
    tensor_to_landmarks,
)
from gpulite.pipeline.calculators.tensors_to_segmentation import TensorsToSegmentationOptions, tensor_to_mask
from gpulite.pipeline.calculators.types import (
    Detection,
    LandmarkList,
    NormalizedLandmark,
    NormalizedRect,
    PipelineValueError,
    RelativeBox,
    Segmentation,
)
from tests.webgpu.support import adapter_problem

BLAZEFACE = SsdAnchorsOptions(num_layers=4, min_scale=0.1484375, max_scale=0.75, input_size_width=128,
                              input_size_height=128, anchor_offset_x=0.5, anchor_offset_y=0.5,
                              strides=(8, 16, 16, 16), aspect_ratios=(1.0,), fixed_anchor_size=True)


def needs_gpu() -> None:
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)


def det(xmin, ymin, w, h, score, kps=()) -> Detection:
    return Detection(RelativeBox(xmin, ymin, w, h), tuple(kps), score)


# -- SsdAnchors ------------------------------------------------------------------------------
def test_blazeface_anchors_count_and_values_follow_the_formula():
    a = generate_anchors(BLAZEFACE)
    assert a.shape == (896, 4) and a.dtype == np.float32
    expected = []
    for grid, per_cell in ((16, 2), (8, 6)):  # stride 8: 1 layer x (ratio 1 + interpolated); stride 16: 3 layers
        for y in range(grid):
            for x in range(grid):
                expected += [((x + 0.5) / grid, (y + 0.5) / grid, 1.0, 1.0)] * per_cell
    np.testing.assert_array_equal(a, np.array(expected, np.float32))


def test_anchor_sizes_without_fixed_size():
    o = SsdAnchorsOptions(num_layers=2, min_scale=0.2, max_scale=0.9, input_size_width=32, input_size_height=16,
                          strides=(8, 16), aspect_ratios=(1.0, 2.0), interpolated_scale_aspect_ratio=1.0,
                          fixed_anchor_size=False)
    a = generate_anchors(o)
    assert a.shape == (4 * 2 * 3 + 2 * 1 * 3, 4)  # 4x2 cells x 3 anchors, then 2x1 cells x 3 anchors
    r2 = math.sqrt(2.0)
    first = [(0.2, 0.2), (0.2 * r2, 0.2 / r2), (math.sqrt(0.2 * 0.9),) * 2]
    second = [(0.9, 0.9), (0.9 * r2, 0.9 / r2), (math.sqrt(0.9),) * 2]
    np.testing.assert_allclose(a[:3, 2:], first, rtol=1e-6)
    np.testing.assert_allclose(a[24:27, 2:], second, rtol=1e-6)
    np.testing.assert_allclose(a[3, :2], (1.5 / 4, 0.5 / 2))  # second cell of the first row
    np.testing.assert_allclose(a[-1, :2], (1.5 / 2, 0.5 / 1))


def test_anchor_options_are_checked():
    with pytest.raises(ValueError, match="strides"):
        SsdAnchorsOptions(num_layers=3, strides=(8, 16))


def test_ssd_anchors_calculator_feeds_tensors_to_detections_in_a_graph():
    reg = np.zeros((1, 896, 16), np.float32)
    scores = np.full((1, 896, 1), -10.0, np.float32)
    scores[0, 700] = 3.0
    b = GraphBuilder()
    b.input_stream("tensors")
    b.node("SsdAnchors", outputs={"ANCHORS": "anchors"}, options=BLAZEFACE)
    b.node("TensorsToDetections", inputs={"TENSORS": "tensors", "ANCHORS": "anchors"},
           outputs={"DETECTIONS": "dets"}, options={"backend": "cpu"})
    b.output_stream("dets")
    g = b.build()
    got = []
    g.observe("dets", lambda p: got.append(p.payload))
    for t in (5, 9):
        g.add_packet("tensors", [reg, scores], timestamp=t)
    g.close()
    anchor = generate_anchors(BLAZEFACE)[700]
    assert [len(d) for d in got] == [1, 1]
    d = got[1][0]
    assert d.score == pytest.approx(1 / (1 + math.exp(-3.0)))
    assert (d.box.xmin, d.box.ymin, d.box.width) == pytest.approx((anchor[0], anchor[1], 0.0))


# -- TensorsToDetections ---------------------------------------------------------------------
def test_decoding_one_box_by_hand():
    anchors = np.array([[0.5, 0.5, 1.0, 1.0], [0.25, 0.75, 0.5, 2.0]], np.float32)
    o = TensorsToDetectionsOptions(num_boxes=2, num_coords=6, keypoint_coord_offset=4, num_keypoints=1,
                                   x_scale=10, y_scale=10, w_scale=10, h_scale=10, min_score_thresh=0.6)
    reg = np.zeros((1, 2, 6), np.float32)
    reg[0, 1] = [1.0, -2.0, 4.0, 3.0, 2.0, 1.0]  # x, y, w, h, kx, ky (reverse_output_order)
    scores = np.array([[[0.0], [200.0]]], np.float32)  # box 0: sigmoid 0.5 < 0.6; box 1 clipped to 100
    (d,) = tensors_to_detections(reg, scores, anchors, o)
    xc, yc = 1.0 / 10 * 0.5 + 0.25, -2.0 / 10 * 2.0 + 0.75
    w, h = 4.0 / 10 * 0.5, 3.0 / 10 * 2.0
    assert (d.box.xmin, d.box.ymin, d.box.width, d.box.height) == pytest.approx((xc - w / 2, yc - h / 2, w, h))
    assert d.keypoints[0] == pytest.approx((2.0 / 10 * 0.5 + 0.25, 1.0 / 10 * 2.0 + 0.75))
    assert d.score == pytest.approx(1.0)


def test_decoding_yx_order_and_exponential_sizes():
    anchors = np.array([[0.5, 0.5, 0.2, 0.4]], np.float32)
    o = TensorsToDetectionsOptions(num_boxes=1, num_coords=4, keypoint_coord_offset=4, num_keypoints=0,
                                   reverse_output_order=False, apply_exponential_on_box_size=True,
                                   x_scale=1, y_scale=1, w_scale=1, h_scale=1, sigmoid_score=False,
                                   min_score_thresh=None, score_clipping_thresh=None)
    reg = np.array([[[0.1, 0.2, math.log(2.0), math.log(3.0)]]], np.float32)  # y, x, h, w
    (d,) = tensors_to_detections(reg, np.array([[[0.7]]], np.float32), anchors, o)
    xc, yc, w, h = 0.2 * 0.2 + 0.5, 0.1 * 0.4 + 0.5, 3.0 * 0.2, 2.0 * 0.4
    assert (d.box.xmin, d.box.ymin, d.box.width, d.box.height) == pytest.approx((xc - w / 2, yc - h / 2, w, h))
    assert d.score == pytest.approx(0.7)


def test_decoding_rejects_wrong_sizes():
    with pytest.raises(PipelineValueError, match="num_boxes x num_coords"):
        tensors_to_detections(np.zeros((1, 10, 16), np.float32), np.zeros((1, 896, 1), np.float32),
                              generate_anchors(BLAZEFACE))


# -- NonMaxSuppression -----------------------------------------------------------------------
def test_weighted_nms_blends_each_cluster_by_score():
    a = det(0.10, 0.10, 0.20, 0.20, 0.9, [(0.15, 0.15)])
    b = det(0.12, 0.10, 0.20, 0.20, 0.6, [(0.17, 0.19)])  # IoU with a: 0.18*0.2 / (0.08 - 0.036) = 0.818
    c = det(0.60, 0.60, 0.10, 0.10, 0.7, [(0.65, 0.65)])  # alone
    out = non_max_suppression([b, c, a], NonMaxSuppressionOptions(min_suppression_threshold=0.3))
    assert [d.score for d in out] == [0.9, 0.7]
    m = out[0]
    assert m.box.xmin == pytest.approx((0.10 * 0.9 + 0.12 * 0.6) / 1.5)
    assert m.box.xmax == pytest.approx((0.30 * 0.9 + 0.32 * 0.6) / 1.5)
    assert m.box.ymin == pytest.approx(0.10) and m.box.height == pytest.approx(0.20)
    assert m.keypoints[0] == pytest.approx(((0.15 * 0.9 + 0.17 * 0.6) / 1.5, (0.15 * 0.9 + 0.19 * 0.6) / 1.5))
    alone = out[1]  # a cluster of one is "blended" too: itself, up to rounding
    assert (alone.box.xmin, alone.box.ymin, alone.box.width, alone.box.height, alone.score) == \
        pytest.approx((0.6, 0.6, 0.1, 0.1, 0.7))


def test_hard_nms_keeps_the_best_and_the_threshold_is_strict():
    a = det(0.0, 0.0, 0.4, 0.2, 0.9)
    b = det(0.2, 0.0, 0.4, 0.2, 0.8)   # IoU with a: 0.2*0.2 / (0.16 - 0.04) = 1/3
    c = det(0.05, 0.0, 0.4, 0.2, 0.7)  # IoU with a: 0.35 / 0.45
    o = NonMaxSuppressionOptions(algorithm="default", min_suppression_threshold=1 / 3 + 1e-9)
    assert non_max_suppression([c, b, a], o) == [a, b]
    o = NonMaxSuppressionOptions(algorithm="default", min_suppression_threshold=0.3)
    assert non_max_suppression([c, b, a], o) == [a]
    o = NonMaxSuppressionOptions(algorithm="default", min_suppression_threshold=0.9, max_num_detections=2)
    assert non_max_suppression([c, b, a], o) == [a, b]
    o = NonMaxSuppressionOptions(algorithm="default", min_suppression_threshold=0.9, min_score_threshold=0.75)
    assert non_max_suppression([c, b, a], o) == [a, b]


def test_overlap_types():
    a, b = RelativeBox(0.0, 0.0, 0.2, 0.2), RelativeBox(0.1, 0.1, 0.4, 0.1)
    inter = 0.1 * 0.1
    assert overlap("intersection_over_union", a, b) == pytest.approx(inter / (0.04 + 0.04 - inter))
    assert overlap("jaccard", a, b) == pytest.approx(inter / (0.5 * 0.2))  # the enclosing rectangle
    assert overlap("modified_jaccard", a, b) == pytest.approx(inter / 0.04)
    assert overlap("intersection_over_union", a, RelativeBox(0.5, 0.5, 0.1, 0.1)) == 0.0


# -- ImageToTensor and the letterbox ---------------------------------------------------------
def _image(h, w, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def _bilinear(img, a, out_w, out_h, border, scale, offset):
    """Reference for the GPU's float path: tensor pixel (x, y) reads ``a @ (x, y, 1)`` bilinearly, in float64."""
    h, w = img.shape[:2]
    ys, xs = np.mgrid[0:out_h, 0:out_w].astype(np.float64)
    sx, sy = a[0, 0] * xs + a[0, 1] * ys + a[0, 2], a[1, 0] * xs + a[1, 1] * ys + a[1, 2]
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = (sx - x0)[..., None], (sy - y0)[..., None]
    out = np.zeros((out_h, out_w, 3))
    for dy, dx, wt in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
        xi, yi = x0 + dx, y0 + dy
        v = img[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1), :3].astype(np.float64)
        if border == "zero":
            v[(xi < 0) | (xi >= w) | (yi < 0) | (yi >= h)] = 0.0
        out += wt * v
    return (out * scale + offset)[None]


def test_letterbox_geometry_and_padding_value():
    img = np.full((480, 640, 3), 255, np.uint8)
    t, tr = image_to_tensor(img, options=ImageToTensorOptions(keep_aspect_ratio=True, border_mode="zero"))
    assert t.shape == (1, 128, 128, 3) and t.dtype == np.float32
    assert tr.padding == pytest.approx((0.0, 0.125, 0.0, 0.125))
    # Tensor rows 0..15 and 112..127 are the letterbox: black, i.e. the range minimum.
    np.testing.assert_array_equal(t[0, :16], -1.0)
    np.testing.assert_array_equal(t[0, 112:], -1.0)
    np.testing.assert_array_equal(t[0, 16:112], 1.0)
    # The image's corners land on the tensor's letterbox edges.
    np.testing.assert_allclose(tr.apply([(0.0, 0.125), (1.0, 0.875)]), [(0.0, 0.0), (1.0, 1.0)], atol=1e-12)


def test_sampling_is_opencv_geometry_and_value_range():
    img = _image(40, 60)
    o = ImageToTensorOptions(output_width=30, output_height=20, output_range=(0.0, 1.0))
    t, _ = image_to_tensor(img, options=o)
    # A 2x downscale samples pixel (2x, 2y) exactly: the rect's corner maps to pixel 0, not 0.5.
    np.testing.assert_allclose(t[0], img[::2, ::2] / 255.0, atol=1e-6)


def test_bilinear_and_border_modes():
    img = np.zeros((2, 2, 3), np.uint8)
    img[:, 0] = 200
    a = np.array([[0.5, 0.0, -0.5], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # tensor x 0..3 reads image x -0.5 .. 1
    projection = np.linalg.inv(a)
    out = warp_to_tensor(img, projection, 4, 2, "replicate", 1.0, 0.0)[0, 0, :, 0]
    np.testing.assert_allclose(out, [200.0, 200.0, 100.0, 0.0])
    out = warp_to_tensor(img, projection, 4, 2, "zero", 1.0, 0.0)[0, 0, :, 0]
    np.testing.assert_allclose(out, [100.0, 200.0, 100.0, 0.0])  # half of x=-1, which is black


@pytest.mark.parametrize("size", [(480, 640), (512, 512), (377, 501), (700, 300)])
@pytest.mark.parametrize("rect", [None, NormalizedRect(0.4, 0.6, 0.5, 0.3, 0.7)])
def test_letterbox_projection_round_trip(size, rect):
    """A point of the image, sent into the tensor by the sampling matrix, comes back through MATRIX."""
    h, w = size
    a, tr = plan_transform((w, h), rect, ImageToTensorOptions(keep_aspect_ratio=True))
    pts_img = np.array([(0.3, 0.2), (0.5, 0.5), (0.9, 0.7)])
    inv = np.linalg.inv(np.vstack([a, [0, 0, 1]]))
    px = np.c_[pts_img * (w, h), np.ones(3)] @ inv.T  # image pixels -> tensor pixels
    back = tr.apply(px[:, :2] / 128.0)
    np.testing.assert_allclose(back, pts_img, atol=1e-12)
    if rect is None:  # a detection (upright box) survives the letterbox round trip unchanged
        box_t = RelativeBox(px[0, 0] / 128, px[0, 1] / 128, (px[2, 0] - px[0, 0]) / 128, (px[2, 1] - px[0, 1]) / 128)
        (d,) = project_detections([Detection(box_t, ((px[1, 0] / 128, px[1, 1] / 128),), 0.5)], tr)
        assert (d.box.xmin, d.box.ymin, d.box.xmax, d.box.ymax) == pytest.approx((0.3, 0.2, 0.9, 0.7))
        assert d.keypoints[0] == pytest.approx((0.5, 0.5))


@pytest.mark.parametrize(("rect", "border", "digest"), [
    (None, "replicate", "a4107ec9919f8688"),
    (NormalizedRect(0.45, 0.4, 0.7, 0.5, 0.35), "zero", "8526d37193cc12a7"),
])
def test_cpu_crop_is_the_bytes_of_mediapipes_opencv(rect, border, digest):
    """The CPU crop, byte for byte, as OpenCV 3.4 (mediapipe 0.10.14 links 3.4.10) computes MediaPipe's calls.

    The digests were made with opencv-python-headless 3.4.18 running MediaPipe's converter steps
    (float32 region, boxPoints, getPerspectiveTransform, warpPerspective); OpenCV 4.10/4.11 give
    them too, 4.14 and 5.x do not (1/32-pixel ties rounded otherwise). The region's scale makes
    many sample positions fall on such ties.
    """
    import hashlib

    img = np.random.default_rng(5).integers(0, 256, (377, 501, 3), dtype=np.uint8)
    projection = opencv_projection((501, 377), rect, 128, 128, keep_aspect_ratio=True)
    t = warp_to_tensor(img, projection, 128, 128, border, 1.0, 0.0)
    o = ImageToTensorOptions(keep_aspect_ratio=True, border_mode=border, output_range=(0.0, 255.0))
    np.testing.assert_array_equal(image_to_tensor(img, rect, options=o)[0], t)
    got = hashlib.sha256(t[0].astype(np.uint8).tobytes()).hexdigest()[:16]
    assert got == digest, f"OpenCV {cv2.__version__} crops otherwise than mediapipe's OpenCV 3.4 (pinned: 4.10-4.11)"


def test_opencv_versions_and_limits():
    assert not untested("4.10.0") and not untested("4.11.0")
    assert untested("4.14.0") and untested("5.1.0") and untested("nonsense")
    with pytest.raises(PipelineValueError, match=r"too large.*32766"):
        image_to_tensor(np.zeros((40000, 2, 3), np.uint8))
    with pytest.raises(PipelineValueError, match="1 to 32766"):
        project_mask(np.zeros((4, 4), np.float32), plan_transform((8, 8), None, ImageToTensorOptions())[1], (0, 5))


def test_rotated_region_samples_the_rotated_rect():
    img = _image(64, 64, seed=3)
    rect = NormalizedRect(0.5, 0.5, 0.5, 0.5, math.pi / 2)  # the centre 32x32, turned a quarter clockwise
    t, _ = image_to_tensor(img, rect, options=ImageToTensorOptions(output_width=32, output_height=32,
                                                                   output_range=(0.0, 255.0)))
    # Tensor pixel (x, y) reads centre + R(90 deg) @ ((x, y) - 16) = (48 - y, 16 + x): the crop turned
    # counter-clockwise, one pixel over because rect corners map to pixel corners (OpenCV's geometry).
    expected = img[16:48, 48:16:-1].transpose(1, 0, 2)
    np.testing.assert_allclose(t[0], expected, atol=1e-3)


def test_image_to_tensor_rejects_bad_images():
    with pytest.raises(PipelineValueError, match="RGB or RGBA uint8"):
        image_to_tensor(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ValueError, match="border_mode"):
        ImageToTensorOptions(border_mode="mirror")


@pytest.mark.parametrize("shape", [(480, 640, 3), (377, 501, 3), (64, 48, 4)])
@pytest.mark.parametrize("border", ["zero", "replicate"])
@pytest.mark.parametrize("rect", [None, NormalizedRect(0.45, 0.4, 0.7, 0.5, 0.35)])
def test_image_to_tensor_cpu_and_gpu_agree(shape, border, rect):
    needs_gpu()
    from gpulite.backends.webgpu.pipeline import ImageToTensorGpu

    img = _image(*shape, seed=sum(shape))
    o = ImageToTensorOptions(keep_aspect_ratio=True, border_mode=border)
    a, _ = plan_transform((shape[1], shape[0]), rect, o)
    ref = _bilinear(img, a, 128, 128, border, *o.value_transform)
    gpu = ImageToTensorGpu().run(img, a, 128, 128, border, *o.value_transform).data_sync()
    assert gpu.shape == ref.shape == (1, 128, 128, 3)
    # Sample coordinates are f32 on the GPU, f64 in the reference: ~1e-5 px apart, i.e. a few 1e-5 in value.
    np.testing.assert_allclose(gpu, ref, atol=2e-4, rtol=0)


@pytest.mark.parametrize("fmt", ["rgb8", "rgba8unorm"])
def test_image_to_tensor_gpu_image_inputs(fmt):
    needs_gpu()
    import wgpu

    from gpulite.backends.webgpu.pipeline import ImageToTensorGpu, shared_device
    from gpulite.pipeline import GpuImage

    img = _image(50, 70, 4, seed=7)
    gdev = shared_device()
    dev = gdev.device
    if fmt == "rgb8":
        rgb = np.ascontiguousarray(img[..., :3])
        data = rgb.tobytes() + bytes(-rgb.nbytes % 4)
        handle = dev.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.STORAGE)
    else:
        handle = dev.create_texture(size=(70, 50, 1), format=wgpu.TextureFormat.rgba8unorm,
                                    usage=wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.COPY_DST)
        dev.queue.write_texture({"texture": handle}, img.tobytes(), {"bytes_per_row": 70 * 4, "rows_per_image": 50},
                                (70, 50, 1))
    o = ImageToTensorOptions(keep_aspect_ratio=True, border_mode="zero")
    a, _ = plan_transform((70, 50), None, o)
    gpu = ImageToTensorGpu().run(GpuImage(handle, 70, 50, fmt, dev), a, 128, 128, "zero",
                                 *o.value_transform).data_sync()
    ref = _bilinear(img, a, 128, 128, "zero", *o.value_transform)
    np.testing.assert_allclose(gpu, ref, atol=2e-4, rtol=0)


def test_detection_decoding_cpu_and_gpu_agree():
    """Many passing anchors, so the GPU decoder's second readback is exercised too."""
    needs_gpu()
    from gpulite.backends.webgpu.pipeline import DetectionDecoderGpu, DeviceTensor, shared_device
    from gpulite.pipeline.calculators.tensors_to_detections import make_detections

    rng = np.random.default_rng(1)
    reg = rng.normal(0, 20, (1, 896, 16)).astype(np.float32)
    scores = rng.normal(-1, 3, (1, 896, 1)).astype(np.float32)
    anchors = generate_anchors(BLAZEFACE)
    o = TensorsToDetectionsOptions()
    gdev = shared_device()
    import wgpu

    data = reg.tobytes() + scores.tobytes()
    buf = gdev.device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    r, s = DeviceTensor(gdev, buf, 0, reg.shape), DeviceTensor(gdev, buf, reg.nbytes, scores.shape)
    idx, best, cls, decoded = DetectionDecoderGpu(anchors, o, first_read=8).run(r, s)
    want = tensors_to_detections(reg, scores, anchors, o)
    got = make_detections(decoded, best, cls, o)
    assert len(idx) > 8 and len(got) == len(want)
    assert list(idx) == sorted(idx)
    for g, w in zip(got, want, strict=True):
        assert g.score == pytest.approx(w.score, abs=1e-6)
        np.testing.assert_allclose([g.box.xmin, g.box.ymin, g.box.width, g.box.height],
                                   [w.box.xmin, w.box.ymin, w.box.width, w.box.height], atol=1e-6)
        np.testing.assert_allclose(g.keypoints, w.keypoints, atol=1e-6)


# -- rects, landmarks, segmentation ----------------------------------------------------------
def test_detection_to_rect_with_rotation_vector():
    d = det(0.2, 0.3, 0.4, 0.2, 0.9, [(0.3, 0.4), (0.3, 0.3)])  # second keypoint straight above the first
    o = DetectionsToRectsOptions(rotation_vector_start_keypoint_index=0, rotation_vector_end_keypoint_index=1,
                                 rotation_vector_target_angle_degrees=90)
    r = detection_to_rect(d, (100, 100), o)
    assert (r.x_center, r.y_center, r.width, r.height) == pytest.approx((0.4, 0.4, 0.4, 0.2))
    assert r.rotation == pytest.approx(0.0)
    o = DetectionsToRectsOptions(rotation_vector_start_keypoint_index=0, rotation_vector_end_keypoint_index=1)
    assert detection_to_rect(d, (100, 100), o).rotation == pytest.approx(-math.pi / 2)
    kp = detection_to_rect(d, None, DetectionsToRectsOptions(conversion_mode="use_keypoints"))
    assert (kp.x_center, kp.y_center, kp.width, kp.height) == pytest.approx((0.3, 0.35, 0.0, 0.1))
    # the target in radians wins over the degrees (MediaPipe's Tasks hand detector sets it to 90: 90 rad)
    o = DetectionsToRectsOptions(rotation_vector_start_keypoint_index=0, rotation_vector_end_keypoint_index=1,
                                 rotation_vector_target_angle_degrees=90, rotation_vector_target_angle=90.0)
    assert detection_to_rect(d, (100, 100), o).rotation == pytest.approx(90.0 - 28 * math.pi - math.pi / 2)


def test_hand_landmarks_to_rect_uses_mediapipes_12_landmarks():
    """Of 21 landmarks MediaPipe keeps 0-3, 5, 6, 9, 10, 13, 14, 17, 18: fingertips and DIPs
    (here far off to the right) change neither the rotation nor the box."""
    from gpulite.pipeline.calculators.landmarks_to_rect import PARTIAL, hand_landmarks_to_rect
    pts = np.zeros((21, 3))
    pts[:, 0] = 0.5
    pts[:, 1] = np.linspace(0.8, 0.4, 21)  # a hand pointing straight up
    far = [i for i in range(21) if i not in PARTIAL]
    pts[far, 0] = 0.9
    r = hand_landmarks_to_rect(LandmarkList.from_arrays(pts), (100, 100))
    kept = pts[PARTIAL, 1]
    assert r.rotation == pytest.approx(0.0, abs=1e-9)
    assert (r.x_center, r.y_center) == pytest.approx((0.5, (kept.max() + kept.min()) / 2))
    assert (r.width, r.height) == pytest.approx((0.0, kept.max() - kept.min()))


def test_rect_transformation():
    r = NormalizedRect(0.5, 0.5, 0.2, 0.1, 0.0)
    t = transform_rect(r, (200, 100), RectTransformationOptions(scale_x=2, scale_y=2, shift_y=-0.5,
                                                                square_long=True))
    # long side 0.2*200 = 40 px -> 0.2 wide, 0.4 high; shift by half the original height, up
    assert (t.x_center, t.y_center, t.width, t.height) == pytest.approx((0.5, 0.45, 0.4, 0.8))
    rot = transform_rect(NormalizedRect(0.5, 0.5, 0.2, 0.2, math.pi / 2), (100, 100),
                         RectTransformationOptions(shift_x=0.5))
    assert (rot.x_center, rot.y_center) == pytest.approx((0.5, 0.6))  # "right" of a quarter-turned rect is down
    assert transform_rect(r, (100, 100), RectTransformationOptions(rotation_degrees=270)).rotation == \
        pytest.approx(-math.pi / 2)


def test_tensors_to_landmarks_and_projection():
    raw = np.array([[10.0, 20.0, 5.0, 0.0, 2.0], [100.0, 50.0, -5.0, 3.0, -1.0]], np.float32)
    o = TensorsToLandmarksOptions(num_landmarks=2, input_image_width=100, input_image_height=200, normalize_z=0.5,
                                  visibility_activation="sigmoid", presence_activation="sigmoid",
                                  flip_horizontally=True)
    lms = tensor_to_landmarks(raw, o)
    assert (lms[0].x, lms[0].y, lms[0].z) == pytest.approx((0.9, 0.1, 5.0 / 100 / 0.5))
    assert lms[1].visibility == pytest.approx(1 / (1 + math.exp(-3.0)))
    assert lms[0].presence == pytest.approx(1 / (1 + math.exp(-2.0)))
    _, tr = plan_transform((400, 200), NormalizedRect(0.5, 0.5, 0.5, 0.5), ImageToTensorOptions())
    p = project_landmarks(lms, tr)
    assert (p[0].x, p[0].y) == pytest.approx((0.25 + 0.9 * 0.5, 0.25 + 0.1 * 0.5))
    assert p[0].z == pytest.approx(lms[0].z * 0.5)


def test_projection_z_scale_as_the_tasks_face_graph():
    """MediaPipe's projection by NORM_RECT and IMAGE_DIMENSIONS (the Tasks' face landmarker) scales z by the
    length of the region's x axis in relative image coordinates: on 640 x 480 a region turned 30 degrees gets
    sqrt(cos^2 + (640/480)^2 sin^2) = 1.093 times the legacy ``z * rect.width``; unturned, the same."""
    lms = LandmarkList((NormalizedLandmark(0.5, 0.5, 0.1),))
    for turn, ratio in ((0.0, 1.0), (math.pi / 6, math.sqrt(0.75 + (640 / 480) ** 2 * 0.25))):
        _, tr = plan_transform((640, 480), NormalizedRect(0.5, 0.5, 0.3, 0.4, turn), ImageToTensorOptions())
        legacy, tasks = project_landmarks(lms, tr), project_landmarks(lms, tr, z_scale="projected_x_axis")
        assert legacy[0].z == pytest.approx(0.1 * 0.3)
        assert tasks[0].z == pytest.approx(0.1 * 0.3 * ratio, rel=1e-6)
        assert (tasks[0].x, tasks[0].y) == (legacy[0].x, legacy[0].y)
    with pytest.raises(ValueError, match="z_scale"):
        project_landmarks(lms, tr, z_scale="height")


def test_heatmap_refinement_on_arrays_matches_the_calculator_landmark_by_landmark():
    """The refinement gathers every landmark's window at once; MediaPipe's calculator goes landmark by
    landmark (cell = int(x * width), the window shrunk at the heatmap's edges, the confidence-weighted
    mean cell index when the window's best confidence reaches the threshold): the same, edges included."""
    def one_by_one(xyz, vis, pres, hm, o):
        h, w, _ = hm.shape
        off, out, vis, pres = (o.kernel_size - 1) // 2, xyz.copy(), list(vis), list(pres)
        for i, (x, y, _) in enumerate(xyz):
            col, row = int(x * w), int(y * h)
            if not (0 <= col < w and 0 <= row < h):
                continue
            r0, r1, c0, c1 = max(0, row - off), min(h, row + off + 1), max(0, col - off), min(w, col + off + 1)
            conf = 1.0 / (1.0 + np.exp(-hm[r0:r1, c0:c1, i].astype(np.float64)))
            rows, cols = np.mgrid[r0:r1, c0:c1]
            if conf.max() >= o.min_confidence_to_refine:
                out[i, :2] = (cols * conf).sum() / w / conf.sum(), (rows * conf).sum() / h / conf.sum()
            if o.refine_presence:
                pres[i] = min(pres[i], conf.max())
            if o.refine_visibility:
                vis[i] = min(vis[i], conf.max())
        return out, vis, pres

    rng = np.random.default_rng(5)
    for k in range(40):
        xyz = rng.uniform(-0.1, 1.1, (39, 3))
        xyz[:4, :2] = [[-0.001, 0.5], [0.999, 0.0], [0.5, 1.0], [0.0, 0.0]]  # just left (cell 0), edges, outside
        vis, pres = rng.random(39).tolist(), rng.random(39).tolist()
        hm = rng.normal(0.0, 3.0, (64, 64, 39)).astype(np.float32)
        o = RefineLandmarksFromHeatmapOptions(kernel_size=int(rng.integers(1, 10)), refine_presence=k % 2 == 0,
                                              refine_visibility=k % 3 == 0)
        got = refine_landmarks(LandmarkList.from_arrays(xyz, vis, pres), hm[None], o)
        want, want_vis, want_pres = one_by_one(xyz, vis, pres, hm, o)
        assert np.abs(got.columns()[0] - want).max() < 1e-12
        assert [p.visibility for p in got] == pytest.approx(want_vis, abs=1e-12)
        assert [p.presence for p in got] == pytest.approx(want_pres, abs=1e-12)


def test_landmarks_to_detection():
    lms = LandmarkList(tuple(NormalizedLandmark(x, y) for x, y in ((0.1, 0.5), (0.4, 0.2), (0.3, 0.9))))
    d = landmarks_to_detection(lms, LandmarksToDetectionOptions(selected_landmark_indices=(0, 1)))
    assert (d.box.xmin, d.box.ymin, d.box.xmax, d.box.ymax) == pytest.approx((0.1, 0.2, 0.4, 0.5))
    assert d.keypoints == ((0.1, 0.5), (0.4, 0.2))
    with pytest.raises(PipelineValueError, match="out of range"):
        landmarks_to_detection(lms, LandmarksToDetectionOptions(selected_landmark_indices=(5,)))


def test_tensors_to_segmentation():
    logits = np.array([[0.0, 2.0], [-2.0, 100.0]], np.float32).reshape(1, 2, 2, 1)
    m = tensor_to_mask(logits, None, TensorsToSegmentationOptions(activation="sigmoid")).mask
    np.testing.assert_allclose(m, 1 / (1 + np.exp(-logits[0, ..., 0].astype(np.float64))), rtol=1e-6)
    two = np.stack([np.zeros((2, 2)), np.log([[1.0, 3.0], [1.0, 1.0]])], -1)[None].astype(np.float32)
    m = tensor_to_mask(two, None, TensorsToSegmentationOptions(activation="softmax")).mask
    np.testing.assert_allclose(m, [[0.5, 0.75], [0.5, 0.5]], rtol=1e-6)
    up = tensor_to_mask(np.array([[0.0, 1.0]], np.float32).reshape(1, 1, 2, 1), (4, 1)).mask
    np.testing.assert_allclose(up, [[0.0, 0.25, 0.75, 1.0]])  # pixel-centre bilinear, edges replicated


# -- AnnotationOverlay -----------------------------------------------------------------------
def test_annotation_draws_boxes_keypoints_and_masks():
    img = np.zeros((100, 200, 3), np.uint8)
    d = det(0.1, 0.2, 0.5, 0.5, 0.9, [(0.8, 0.8)])
    mask = np.zeros((100, 200), np.float32)
    mask[:, 150:] = 1.0
    o = AnnotationOverlayOptions(box_color=(0, 255, 0), keypoint_color=(255, 0, 0), mask_color=(0, 0, 200),
                                 mask_alpha=0.5, thickness=2, keypoint_radius=2)
    out = annotate(img, detections=[d], mask=Segmentation(mask), options=o)
    assert out is not img and not img.any()
    assert tuple(out[20, 50]) == (0, 255, 0) and tuple(out[21, 50]) == (0, 255, 0)  # top edge, 2 px
    assert tuple(out[22, 50]) == (0, 0, 0) and tuple(out[45, 60]) == (0, 0, 0)  # inside stays
    assert tuple(out[70, 20]) == (0, 255, 0) and tuple(out[70, 120]) == (0, 255, 0)  # left and right edges
    assert tuple(out[80, 160]) == (255, 0, 0)  # keypoint at (0.8, 0.8) * (200, 100)
    assert tuple(out[5, 190]) == (0, 0, 100)  # mask half-blended
    assert tuple(out[5, 100]) == (0, 0, 0)


# -- sources and sinks -----------------------------------------------------------------------
def test_video_writer_and_reader_round_trip(tmp_path: Path):
    frames = [np.full((48, 64, 3), 40 * k, np.uint8) for k in range(5)]
    with VideoWriter(tmp_path / "v.mp4", fps=25) as w:
        for f in frames:
            w.write(f)
    with VideoReader(tmp_path / "v.mp4") as r:
        got = list(r)
    assert len(got) == 5
    ts = [t for t, _ in got]
    assert ts == sorted(set(ts)) and ts[1] - ts[0] == 40000  # microseconds at 25 fps
    for (_, g), f in zip(got, frames, strict=True):
        assert g.shape == (48, 64, 3) and abs(float(g.mean()) - float(f.mean())) < 4


def test_sources_and_sinks_in_graphs(tmp_path: Path):
    from PIL import Image

    (tmp_path / "in").mkdir()
    for k in range(3):
        Image.fromarray(np.full((8, 8, 3), 50 * k, np.uint8)).save(tmp_path / "in" / f"{k}.png")
    seen = []
    b = GraphBuilder()
    b.node("ImageFolderSource", outputs={"IMAGE": "img"}, options={"folder": str(tmp_path / "in")})
    b.node("ImageWriterSink", inputs={"IMAGE": "img"}, options={"folder": str(tmp_path / "out")})
    b.node("CallbackSink", inputs={"IN": "img"}, side_inputs={"CALLBACK": "cb"})
    b.side_packet("cb", lambda ts, img: seen.append((ts, int(img[0, 0, 0]))))
    g = b.build()
    g.start()
    g.wait_until_done()
    assert seen == [(0, 0), (33333, 50), (66666, 100)]  # microseconds at 30 frames/s
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"frame_{k:06d}.png" for k in range(3)]

    frames = [np.zeros((4, 4, 3), np.uint8), np.ones((4, 4, 3), np.uint8)]
    got = []
    b = GraphBuilder()
    b.node("FrameSource", side_inputs={"FRAMES": "frames"}, outputs={"IMAGE": "img"})
    b.node("ImageProperties", inputs={"IMAGE": "img"}, outputs={"SIZE": "size"})
    b.output_stream("size")
    b.side_packet("frames", frames)
    g = b.build()
    g.observe("size", lambda p: got.append((p.timestamp, p.payload)))
    g.start()
    g.wait_until_done()
    assert got == [(0, (4, 4)), (33333, (4, 4))]


def test_missing_inputs_raise_source_errors(tmp_path: Path):
    with pytest.raises(SourceUnavailableError, match="does not exist"):
        VideoReader(tmp_path / "none.mp4")


def test_camera_source_without_a_camera():
    try:
        cap = open_camera(0)
    except SourceUnavailableError as e:
        assert "camera" in str(e) or "OpenCV" in str(e)
        return
    cap.release()
    pytest.skip("a camera exists here: the no-camera error path cannot be exercised")


# -- implementation selection ----------------------------------------------------------------
def test_backend_selection_logs_every_fallback(monkeypatch, caplog):
    from gpulite.pipeline.calculators import _select

    monkeypatch.setattr(_select, "webgpu_status", lambda: (False, False, "no adapter (test)"))
    with caplog.at_level("INFO", logger="gpulite.pipeline.calculators"):
        assert _select.select_backend("webgpu", "n1", "ImageToTensor") == "cpu"
        assert _select.select_backend("auto", "n2", "Inference") == "cpu"
    msgs = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("WARNING", "node 'n1' (ImageToTensor): webgpu requested but unavailable (no adapter (test)); "
                       "running on the cpu") in msgs
    assert any(level == "INFO" and "'n2'" in m and "no adapter (test)" in m for level, m in msgs)
    monkeypatch.setattr(_select, "webgpu_status", lambda: (True, False, "software adapter"))
    assert _select.select_backend("auto", "n3", "Inference") == "cpu"  # never a CPU-type adapter over numpy
    assert _select.select_backend("webgpu", "n3", "Inference") == "webgpu"
    monkeypatch.setattr(_select, "webgpu_status", lambda: (True, True, "a GPU"))
    assert _select.select_backend("auto", "n4", "Inference") == "webgpu"
    assert _select.select_backend("cpu", "n4", "Inference") == "cpu"
    with pytest.raises(ValueError, match="backend must be one of"):
        ImageToTensorOptions(backend="cuda")


def test_remap_tables_give_warp_perspectives_bytes():
    """perspective_maps reproduces cv2.warpPerspective's fixed-point coordinates (its column
    blocks, sums and ties included), so cv2.remap with them gives the same bytes: random
    rotations, zooms and perspectives, output sizes across OpenCV's 64-column blocks, both
    borders, RGB and RGBA, and simple-fraction scales whose positions fall on 1/32-pixel ties."""
    from gpulite.pipeline.calculators.image_to_tensor import perspective_maps

    rng = np.random.default_rng(3)
    for trial in range(80):
        img = rng.integers(0, 256, (int(rng.integers(20, 300)), int(rng.integers(20, 400)), 3 + trial % 2), np.uint8)
        a, s = rng.uniform(-3, 3), rng.uniform(0.1, 4)
        m = np.array([[np.cos(a) * s, -np.sin(a) * s, rng.uniform(-200, 200)],
                      [np.sin(a) * s, np.cos(a) * s, rng.uniform(-200, 200)],
                      [rng.uniform(-2e-3, 2e-3) * (trial % 3 == 0), rng.uniform(-2e-3, 2e-3) * (trial % 5 == 0), 1]])
        if trial % 4 == 0:
            m = np.array([[0.25 * (1 + trial % 3), 0, 0.5], [0, 0.5, 0.25], [0, 0, 1]])
        ow, oh = int(rng.integers(1, 200)), int(rng.integers(1, 200))
        border = (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE)[trial % 2]
        want = cv2.warpPerspective(img, m, (ow, oh), flags=cv2.INTER_LINEAR, borderMode=border)
        xy, frac = perspective_maps(m, ow, oh)
        got = cv2.remap(img, xy, frac, cv2.INTER_LINEAR, borderMode=border)
        assert np.array_equal(got, want), f"trial {trial}: {(got != want).sum()} values differ"


def test_a_projection_used_again_is_warped_from_kept_tables(monkeypatch):
    from gpulite.pipeline.calculators import image_to_tensor as itt

    img = np.random.default_rng(4).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    projection = opencv_projection((640, 480), None, 256, 256, keep_aspect_ratio=False)
    calls = []
    real = itt.cv2.warpPerspective
    monkeypatch.setattr(itt.cv2, "warpPerspective", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    monkeypatch.setattr(itt, "_maps", itt.OrderedDict())
    first = warp_to_tensor(img, projection, 256, 256, "zero", 1 / 255, 0.0)
    second = warp_to_tensor(img, projection, 256, 256, "zero", 1 / 255, 0.0)
    assert len(calls) == 1, "the second use should remap with the kept tables"
    np.testing.assert_array_equal(first, second)
