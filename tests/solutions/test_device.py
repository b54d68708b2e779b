"""Solutions on webgpu against device trouble (issue 14).

A lost device: the frame that meets the loss raises ``DeviceLostError`` with advice a Solution
can follow, and the next ``process`` runs a fresh graph on a working device, giving what the
same frames gave before the loss. Each case runs in a subprocess (work submitted to a lost
device can abort a process) on a shared device of its own (``GPULITE_ADAPTER`` names the
adapter: a separate shared-device key).

A frame over the device's limits raises ``DeviceLimitsError`` before anything reaches the GPU,
and the frames after it run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.webgpu.support import adapter_problem

pytestmark = pytest.mark.skipif(adapter_problem() is not None, reason=str(adapter_problem()))

ROOT = Path(__file__).resolve().parents[2]

_LOSS = r"""
import json, sys
import numpy as np
from gpulite import DeviceLostError
from gpulite.backends.webgpu import get_device
from gpulite.solutions import FaceDetector, FaceMesh
from tests.assets import load_image

solution = {"FaceDetector": FaceDetector, "FaceMesh": FaceMesh}[sys.argv[1]]
image = load_image("astronaut.png")

def summary(result):
    if hasattr(result, "detections"):
        return [[d.location_data.relative_bounding_box.xmin, d.location_data.relative_bounding_box.ymin,
                 d.location_data.relative_bounding_box.width] for d in result.detections or []]
    return [[p.x, p.y, p.z] for face in result.multi_face_landmarks or [] for p in face.landmark[:20]]

report = {}
with solution(backend="webgpu") as s:
    before = [summary(s.process(image)) for _ in range(2)]  # the second frame tracks (FaceMesh)
    lost = get_device()
    lost.device.destroy()
    try:
        s.process(image)
        report["lost_frame"] = "no error"
    except DeviceLostError as e:
        report["lost_frame"] = str(e)
    after = [summary(s.process(image)) for _ in range(2)]
    report["new_device"] = get_device() is not lost and get_device().lost is None
report["before"], report["after"] = before, after
print("REPORT " + json.dumps(report))
"""


@pytest.mark.timeout(400)
@pytest.mark.parametrize("solution", ["FaceDetector", "FaceMesh"])
def test_solution_recovers_from_device_loss_on_the_next_process(solution):
    from gpulite.backends.webgpu.device import ENV_ADAPTER, get_device

    env = dict(os.environ, PYTHONPATH=str(ROOT), **{ENV_ADAPTER: get_device().name})
    done = subprocess.run([sys.executable, "-c", _LOSS, solution], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=360)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr[-3000:]}"
    report = json.loads(done.stdout.split("REPORT ")[-1])
    msg = report["lost_frame"]
    assert msg.startswith(f"{solution}.process: the GPU device was lost (destroy() was called on it"), msg
    assert "the next process() call runs a fresh graph on a working device" in msg
    assert "Interpreter.recover" not in msg, "advice a Solution cannot follow"
    assert report["new_device"]
    # A fresh graph: the same frames give what they gave before the loss, tracking included.
    for before, after in zip(report["before"], report["after"], strict=True):
        assert before, "the test image must give a result to compare"
        assert len(after) == len(before)
        for a, b in zip(after, before, strict=True):
            assert a == pytest.approx(b, abs=1e-5)


@pytest.mark.timeout(300)
def test_a_frame_over_the_device_limits_raises_device_limits_error_and_later_frames_run():
    from gpulite import DeviceLimitsError
    from gpulite.backends.webgpu.device import get_device
    from gpulite.solutions import FaceDetector
    from tests.assets import load_image

    limit = get_device().limits["max-storage-buffer-binding-size"]
    if 10000 * 10000 * 3 <= limit:
        pytest.skip(f"this device binds {limit} bytes: a 10000x10000 frame fits it")
    huge = np.zeros((10000, 10000, 3), np.uint8)  # calloc'd: its pages are never touched
    image = load_image("astronaut.png")
    with FaceDetector(backend="webgpu") as fd:
        before = fd.process(image).detections
        with pytest.raises(DeviceLimitsError) as e:
            fd.process(huge)
        msg = str(e.value)
        assert msg.startswith("FaceDetector.process: ") and "ImageToTensor on a 10000x10000 frame" in msg
        assert f"max-storage-buffer-binding-size: needs 300000000 (the frame, bound whole by image_to_tensor.wgsl), " \
               f"the device has {limit}" in msg
        after = fd.process(image).detections  # the refused frame broke nothing
        assert len(after) == len(before) == 1
        box = after[0].location_data.relative_bounding_box
        ref = before[0].location_data.relative_bounding_box
        assert (box.xmin, box.ymin, box.width) == pytest.approx((ref.xmin, ref.ymin, ref.width), abs=1e-5)
    # close() above raised nothing: the refused frame's error is not raised a second time
