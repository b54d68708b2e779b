"""gpulite.tasks' API shell: module paths, Image, BaseOptions, and the running-mode rules of
every vision task (a stand-in task here; the real tasks' own tests check the same through them).

The errors' types and messages are those mediapipe 1.2.2 gives for the same calls
(tools/tasks_oracle.py records them in tests/data/tasks/oracle.json; test_vision_tasks.py checks them)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gpulite as mp
from gpulite.tasks import python
from gpulite.tasks.errors import ImageFormatError, InputTimestampError, RunningModeError, TaskClosedError
from gpulite.tasks.python import vision
from gpulite.tasks.vision.core.base_vision_task_api import BaseVisionTaskApi

RGB = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)


class Echo(BaseVisionTaskApi):
    """A task whose result is (timestamp, the image's mean)."""

    def __init__(self, running_mode=vision.RunningMode.IMAGE, result_callback=None, fail_at=None):
        super().__init__(running_mode, result_callback)
        self.fail_at, self.closed_graph = fail_at, False

    def detect(self, image, image_processing_options=None):
        return self._process_image_data(image, image_processing_options, "detect")

    def detect_for_video(self, image, timestamp_ms, image_processing_options=None):
        return self._process_video_data(image, timestamp_ms, image_processing_options, "detect_for_video")

    def detect_async(self, image, timestamp_ms, image_processing_options=None):
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "detect_async")

    def _run(self, rgb, timestamp_ms, ipo):
        if timestamp_ms is not None and timestamp_ms == self.fail_at:
            raise RuntimeError(f"frame {timestamp_ms} failed")
        assert rgb.shape[2] == 3 and rgb.dtype == np.uint8
        return timestamp_ms, float(rgb.mean())

    def _close(self):
        self.closed_graph = True


def image(data=RGB, fmt=mp.ImageFormat.SRGB):
    return mp.Image(image_format=fmt, data=data)


def test_module_paths_are_mediapipes():
    import gpulite.tasks.python.components.containers as c1
    import gpulite.tasks.python.vision.core.image as im

    from gpulite.tasks.components import containers as c2

    assert c1 is c2 and im.Image is mp.Image and im.ImageFormat is mp.ImageFormat
    assert im.__spec__.name == "gpulite.tasks.vision.core.image"
    assert vision.RunningMode.LIVE_STREAM.value == "LIVE_STREAM"
    det = c1.Detection(bounding_box=c1.BoundingBox(origin_x=1, origin_y=2, width=3, height=4),
                       categories=[c1.Category(index=0, score=0.9, display_name=None, category_name="face")],
                       keypoints=[c1.NormalizedKeypoint(x=0.5, y=0.5)])
    assert det.bounding_box.width == 3 and det.categories[0].category_name == "face"
    assert c1.NormalizedLandmark(x=0.1).visibility is None and c1.Landmark(z=1.0).presence is None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        vision.Nope  # noqa: B018


def test_image():
    img = image()
    assert (img.width, img.height, img.channels, img.image_format) == (5, 4, 3, mp.ImageFormat.SRGB)
    view = img.numpy_view()
    assert not view.flags.writeable and np.array_equal(view, RGB) and img[1, 2, 0] == RGB[1, 2, 0]
    gray = image(RGB[..., 0], mp.ImageFormat.GRAY8)
    assert gray.numpy_view().shape == (4, 5, 1) and gray[1, 2] == RGB[1, 2, 0]
    data = RGB.copy()
    img = image(data)
    data[:] = 0
    assert img.numpy_view().any()  # a copy, as MediaPipe's
    assert image(RGB[:, ::2]).width == 3  # strided data is copied contiguous


@pytest.mark.parametrize(("fmt", "data", "match"), [
    (mp.ImageFormat.SRGB, np.zeros((4, 5, 3), np.float32), "Unsupported image format: SRGB"),
    (mp.ImageFormat.SRGB, np.zeros((4, 5, 3)), "Unsupported numpy data type: float64"),
    (mp.ImageFormat.SRGB, np.zeros((1, 4, 5, 3), np.uint8), "Unsupported number of dimensions:4"),
    (mp.ImageFormat.SRGB, np.zeros((4, 5, 4), np.uint8), "SRGB has 3 channel"),
    (mp.ImageFormat.GRAY16, np.zeros((4, 5), np.uint8), "Unsupported image format: GRAY16"),
])
def test_image_refuses(fmt, data, match):
    with pytest.raises(ValueError, match=match) as e:
        mp.Image(image_format=fmt, data=data)
    assert isinstance(e.value, ImageFormatError)


def test_a_mediapipe_task_gpulite_lacks_is_named_as_such():
    with pytest.raises(AttributeError, match=r"^mediapipe 1\.2\.2's vision\.GestureRecognizer is not in "
                                             r"gpulite\.tasks \(yet\); it has FaceDetector, FaceLandmarker"):
        vision.GestureRecognizer  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'FaceDetecter'"):
        vision.FaceDetecter  # noqa: B018


def test_image_from_file(tmp_path):
    img = mp.Image.create_from_file("tests/data/images/astronaut.png")
    assert (img.width, img.height, img.image_format) == (512, 512, mp.ImageFormat.SRGB)
    with pytest.raises(FileNotFoundError, match="Can't find file"):
        mp.Image.create_from_file(tmp_path / "none.png")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(RuntimeError, match="Failed to load image from file"):
        mp.Image.create_from_file(tmp_path / "bad.png")
    with pytest.raises(RuntimeError, match=r"^Error while reading file: .*: a folder"):  # as mediapipe 1.2.2
        mp.Image.create_from_file(tmp_path)


def test_base_options_backends():
    gpu, cpu = python.BaseOptions.Delegate.GPU, python.BaseOptions.Delegate.CPU
    assert python.BaseOptions(delegate=gpu).resolve_backend() == "webgpu"
    assert python.BaseOptions(delegate=cpu).resolve_backend() in ("litert", "cpu")
    assert python.BaseOptions().resolve_backend() == python.BaseOptions(delegate=cpu).resolve_backend()
    assert python.BaseOptions(delegate=gpu, backend="cpu").resolve_backend() == "cpu"
    with pytest.raises(ValueError, match="backend must be one of"):
        python.BaseOptions(backend="tpu").resolve_backend()


@pytest.mark.parametrize(("mode", "call"), [
    ("IMAGE", "detect_for_video"), ("IMAGE", "detect_async"), ("VIDEO", "detect"), ("VIDEO", "detect_async"),
    ("LIVE_STREAM", "detect"), ("LIVE_STREAM", "detect_for_video")])
def test_wrong_mode(mode, call):
    cb = (lambda *a: None) if mode == "LIVE_STREAM" else None
    task = Echo(vision.RunningMode[mode], cb)
    want = {"detect": "image", "detect_for_video": "video", "detect_async": "live stream"}[call]
    args = (image(),) if call == "detect" else (image(), 0)
    with pytest.raises(ValueError, match=f"^Task is not initialized with the {want} mode. Current running mode:"
                                         f"{ {'IMAGE': 'image', 'VIDEO': 'video', 'LIVE_STREAM': 'live stream'}[mode]} "
                                         "mode") as e:
        getattr(task, call)(*args)
    assert isinstance(e.value, RunningModeError)
    task.close()


def test_callback_rules():
    with pytest.raises(ValueError, match="live stream mode, a user-defined result callback must be provided"):
        Echo(vision.RunningMode.LIVE_STREAM)
    for mode in ("IMAGE", "VIDEO"):
        with pytest.raises(ValueError, match=r"image or video mode, a user-defined result callback should not"):
            Echo(vision.RunningMode[mode], lambda *a: None)
    with pytest.raises(ValueError, match=r"running_mode must be a vision\.RunningMode"):
        Echo("VIDEO")


def test_video_timestamps():
    with Echo(vision.RunningMode.VIDEO) as task:
        assert task.detect_for_video(image(), 0) == (0, float(RGB.mean()))
        for bad in (0, -5):
            with pytest.raises(InputTimestampError, match=r"^Input timestamp must be monotonically increasing\."):
                task.detect_for_video(image(), bad)
        assert task.detect_for_video(image(), 10)[0] == 10
        with pytest.raises(TypeError, match="timestamp_ms must be an int"):
            task.detect_for_video(image(), 20.5)
        assert task.detect_for_video(image(), np.int64(20))[0] == 20


def test_wrong_images():
    with Echo() as task:
        with pytest.raises(TypeError, match=r"expected a gpulite Image .* got ndarray \(wrap a numpy array"):
            task.detect(RGB)
        gray, floats = RGB[..., 0], RGB[..., 0].astype(np.float32)
        for fmt, data in ((mp.ImageFormat.GRAY8, gray), (mp.ImageFormat.VEC32F1, floats)):
            with pytest.raises(ImageFormatError, match=f"the image is {fmt.name}; this task takes SRGB or SRGBA"):
                task.detect(image(data, fmt))
        rgba = np.concatenate([RGB, np.full((4, 5, 1), 7, np.uint8)], axis=2)
        assert task.detect(image(rgba, mp.ImageFormat.SRGBA)) == task.detect(image())  # alpha dropped


def test_closed():
    task = Echo()
    with task:
        pass
    assert task.closed_graph
    with pytest.raises(TaskClosedError, match="after close"):
        task.detect(image())
    task.close()  # twice is fine


def test_live_stream_delivers_every_result_in_order():
    got, threads = [], set()

    def callback(result, output_image, timestamp_ms):
        threads.add(threading.get_ident())
        got.append((result[0], timestamp_ms, output_image))

    frames = [image(RGB + i) for i in range(20)]
    task = Echo(vision.RunningMode.LIVE_STREAM, callback)
    for i, f in enumerate(frames):
        assert task.detect_async(f, 10 * i) is None
    with pytest.raises(InputTimestampError):
        task.detect_async(frames[0], 10 * 19)
    task.close()
    assert [(r, ts) for r, ts, _ in got] == [(10 * i, 10 * i) for i in range(20)]
    assert all(img is f for (_, _, img), f in zip(got, frames, strict=True))
    assert threading.get_ident() not in threads


def test_live_stream_error_is_raised_in_the_callers_thread():
    got = []
    task = Echo(vision.RunningMode.LIVE_STREAM, lambda r, im, ts: got.append(ts), fail_at=1)
    task.detect_async(image(), 0)
    task.detect_async(image(), 1)
    task.detect_async(image(), 2)
    with pytest.raises(RuntimeError, match="frame 1 failed"):
        task.close()
    assert got == [0, 2]
