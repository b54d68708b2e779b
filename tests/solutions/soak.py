"""A soak loop for the solutions: many frames through one solution, resident set size and GPU memory sampled.

Used by ``tests/solutions/test_soak.py`` (a short loop on whatever WebGPU adapter the machine
has: lavapipe in CI) and ``benchmarks/soak.py`` (10,000 frames on a real GPU).

GPU memory is what wgpu-py counts as alive in this process: the bytes of every buffer and
texture (``wgpu.diagnostics``, ``resource_mem``) and the number of wgpu objects (buffers,
bind groups, pipelines, ...), so a leaked bind group shows up even when it holds no memory.
Each sample is taken after ``gc.collect()``, so garbage waiting for the cycle collector is
not counted as a leak. Frames go forward then backward through the clip (smooth motion, so
tracking keeps going as in a video).

::

    samples = soak(FaceMesh(backend="webgpu"), make_frames(60), frames=1000, warmup=50, every=100)
    growth(samples)   # {"rss": 0.004, "gpu_bytes": 0.0, "gpu_objects": 0.0}: max over the first sample - 1
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

LIMIT = 0.05  # the soak passes when nothing grows by more than 5% after warm-up


@dataclass(frozen=True)
class Sample:
    frame: int  # frames processed so far, warm-up included
    rss: int  # resident set size, bytes
    gpu_bytes: int  # bytes of live wgpu buffers and textures
    gpu_objects: int  # live wgpu objects


def rss_bytes() -> int:
    """This process's resident set size now (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def gpu_usage() -> tuple[int, int]:
    """``(bytes, objects)`` alive in wgpu in this process; (0, 0) without wgpu."""
    try:
        import wgpu
    except ImportError:
        return 0, 0
    total = wgpu.diagnostics.object_counts.get_dict()["total"]
    return int(total.get("resource_mem", 0)), int(total["count"])


def sample(frame: int) -> Sample:
    gc.collect()
    return Sample(frame, rss_bytes(), *gpu_usage())


def clip_index(i: int, n: int) -> int:
    """Frame ``i`` of an endless forward-backward pass over ``n`` frames."""
    if n == 1:
        return 0
    k = i % (2 * n - 2)
    return k if k < n else 2 * n - 2 - k


def soak(solution: Any, clip: list[np.ndarray], *, frames: int, warmup: int, every: int,
         after_frame: Callable[[int, Any], None] | None = None) -> list[Sample]:
    """Process ``warmup + frames`` frames; a sample after the warm-up and then every ``every`` frames.

    ``after_frame(i, result)`` runs after each frame (tests inject leaks with it).
    """
    samples = []
    for i in range(warmup + frames):
        result = solution.process(clip[clip_index(i, len(clip))])
        if after_frame is not None:
            after_frame(i, result)
        done = i + 1
        if done >= warmup and ((done - warmup) % every == 0 or done == warmup + frames):
            samples.append(sample(done))
    return samples


def growth(samples: list[Sample]) -> dict[str, float]:
    """Per quantity, the largest value after the first sample over the first, minus 1 (0: flat)."""
    out = {}
    for name in ("rss", "gpu_bytes", "gpu_objects"):
        first = getattr(samples[0], name)
        top = max(getattr(s, name) for s in samples)
        out[name] = top / first - 1 if first else float(top > 0)
    return out


def verdict(samples: list[Sample], limit: float = LIMIT) -> list[str]:
    """What grew by more than ``limit`` (empty: flat), each with its first and largest value."""
    grew = growth(samples)
    return [f"{name} grew {100 * g:.1f}% ({getattr(samples[0], name)} -> {max(getattr(s, name) for s in samples)})"
            for name, g in grew.items() if g > limit]
