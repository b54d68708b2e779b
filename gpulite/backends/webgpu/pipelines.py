"""Compile a plan's missing pipelines at ``allocate_tensors``, in parallel where it pays.

Pipelines are created with ``create_compute_pipeline_async``: wgpu-py resolves it at once
while wgpu-native lacks the asynchronous entry point, and becomes truly asynchronous without
a change here once it has one. Parallelism comes from threads: wgpu-py calls wgpu-native
through cffi, which releases the GIL, and wgpu-native's device is thread-safe (wgpu-py's
error capture is per thread, so an error still lands on the call that caused it).

Threads only pay where the driver compiles at pipeline creation (desktop Vulkan, Metal,
D3D12). A CPU adapter such as lavapipe compiles lazily at the first dispatch, so creation is
cheap and threads measured slower there (26 pipelines: 0.09 s on one thread, 0.14 s on four);
CPU adapters therefore use one thread. ``GPULITE_PIPELINE_THREADS`` overrides the choice, except
on an OpenGL adapter, whose context is bound to one thread: wgpu's GLES backend aborts the
process when a pipeline is created on another, so there it is always one thread.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .program import Program, get_pipeline

ENV_THREADS = "GPULITE_PIPELINE_THREADS"
MAX_THREADS = 8


def _threads(gdev: Any, missing: int) -> int:
    if str(gdev.adapter.info.get("backend_type", "")).lower() in ("opengl", "gles"):
        return 1  # a GL context belongs to one thread: wgpu's GLES backend panics (EGL BadAccess) on another
    env = os.environ.get(ENV_THREADS)
    if env:
        try:
            wanted = int(env)
        except ValueError:
            raise ValueError(f"{ENV_THREADS} must be an int, got {env!r}") from None
    elif str(gdev.adapter.info.get("adapter_type", "")).lower() == "cpu":
        wanted = 1
    else:
        wanted = min(MAX_THREADS, os.cpu_count() or 1)
    return max(1, min(wanted, missing))


def _create(gdev: Any, p: Program) -> tuple[Program, Any, Exception | None]:
    try:
        module = gdev.device.create_shader_module(label=p.name, code=p.wgsl)
        promise = gdev.device.create_compute_pipeline_async(
            label=p.name, layout=gdev.pipeline_layout_for(p.weights), compute={"module": module, "entry_point": "main"})
        return p, promise.sync_wait(), None
    except Exception as e:  # retried on the calling thread, which raises the proper KernelError
        return p, None, e


def prepare_pipelines(gdev: Any, programs: list[Program]) -> int:
    """Put every program's pipeline into ``gdev``'s cache; returns how many were compiled.

    Raises
    ------
    KernelError
        For a rejected kernel, naming it (from :func:`~.program.get_pipeline`).
    """
    missing: dict[tuple, Program] = {}
    for p in programs:
        if p.key not in gdev.pipelines:
            missing.setdefault(p.key, p)
    threads = _threads(gdev, len(missing))
    for weights in {p.weights for p in missing.values()}:  # created lazily: here, not racing in the workers
        gdev.pipeline_layout_for(weights)
    if threads == 1:
        results = [_create(gdev, p) for p in missing.values()]
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gpulite-pipelines") as pool:
            results = list(pool.map(lambda p: _create(gdev, p), missing.values()))
    for p, pipeline, err in results:  # the cache is only written here, on the calling thread
        if err is None:
            gdev.pipelines[p.key] = (p.wgsl, pipeline)
        else:
            get_pipeline(gdev, p)  # raises the KernelError naming the kernel (or succeeds)
    return len(missing)
