"""Soak: FaceMesh and Pose on webgpu keep resident memory and GPU memory flat after warm-up.

A short loop of ``benchmarks/soak.py`` (10,000 frames on a real GPU): on lavapipe a FaceMesh
frame takes about 0.3 s and a Pose frame about 2 s, so CI runs tens of frames. GPU memory is
what wgpu counts alive (bytes of buffers and textures, and objects), so one leaked buffer or
bind group per frame fails the check within a few frames; the last test injects such leaks
(and a host one) and checks that the soak catches each.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.solutions.soak import LIMIT, gpu_usage, growth, rss_bytes, soak, verdict
from tests.solutions.video import make_frames
from tests.webgpu.support import adapter_problem

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clip() -> list[np.ndarray]:
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    return make_frames(12)


@pytest.mark.parametrize("name, frames, warmup, every", [("FaceMesh", 16, 4, 4), ("Pose", 6, 2, 2)])
def test_memory_stays_flat_on_webgpu(clip, name, frames, warmup, every):
    from gpulite import solutions

    with getattr(solutions, name)(backend="webgpu") as sol:
        samples = soak(sol, clip, frames=frames, warmup=warmup, every=every)
        moved = sol.last_transfers
    assert len(samples) == frames // every + 1
    assert not verdict(samples), f"{name}: {verdict(samples)}; samples {samples}"
    if name == "FaceMesh":  # a tracked frame: the frame goes up once, landmarks come down, few submits
        frame = clip[0].nbytes
        assert frame <= moved["bytes_uploaded"] <= frame + 1024, moved
        assert 0 < moved["bytes_read_back"] <= 16 << 10, moved
        assert 1 <= moved["submits"] <= 5, moved


def test_the_soak_catches_leaks(clip):
    """Leaked wgpu buffers (1% of the live objects and bytes) and host memory (1% of the resident
    set) per frame fail it within 16 frames."""
    from gpulite.backends.webgpu import get_device
    from gpulite.solutions import FaceMesh

    kept = []
    device = get_device().device
    # 1% of the process's memory and objects per frame, however much the suite has made alive
    host = rss_bytes() // 100
    gpu_bytes, gpu_objects = gpu_usage()
    size, count = max(256 << 10, gpu_bytes // 100 // 4 * 4), gpu_objects // 100 + 1

    def leak(i, result):
        kept.extend(device.create_buffer(size=size, usage="STORAGE") for _ in range(count))
        kept.append(np.ones(host, np.uint8))

    with FaceMesh(backend="webgpu") as sol:
        samples = soak(sol, clip, frames=16, warmup=4, every=8, after_frame=leak)
    grew = growth(samples)
    assert all(g > LIMIT for g in grew.values()), grew
    assert len(verdict(samples)) == 3
