"""Images/s of gpulite.batch on a local Ray (1 and 2 workers) against a plain loop, same images.

    python benchmarks/batch_ray.py [--solution face_mesh] [--images 96] [--backend cpu]

The images are the three shipped photos, cropped, flipped and scaled (as tests/batch makes
them), written as PNG files; every run reads them from disk and decodes them, as a user's
job would. Each figure includes building the solution (once in the loop, once per actor),
not Ray's own start (``ray.init``), which is printed apart. On a cluster the same code runs
with ``ray.init(address=...)``; each node needs gpulite (with its models in the cache, or
network to fetch them) and the images on shared storage or in object storage.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_images(folder: Path, n: int) -> list[Path]:
    from tests.assets import load_image

    photos = [load_image(name) for name in ("astronaut.png", "chelsea.png", "coffee.png")]
    paths = []
    for k in range(n):
        img = photos[k % 3]
        h, w = img.shape[:2]
        crop = img[(k * 7) % (h // 5):, (k * 11) % (w // 5):]
        crop = crop[:, ::-1] if k % 2 else crop
        p = folder / f"img{k:03d}.png"
        Image.fromarray(np.ascontiguousarray(crop)).save(p)
        paths.append(p)
    return paths


def plain_loop(paths: list[Path], solution: str, backend: str) -> float:
    import gpulite.solutions as solutions
    from gpulite import batch
    from gpulite.pipeline.calculators.sources import load_image

    t0 = time.perf_counter()
    cls = batch.solution_class(solution)
    kwargs = {"static_image_mode": True} if cls in batch.TRACKING else {}
    with getattr(solutions, cls)(backend=backend, **kwargs) as sol:
        for p in paths:
            sol.process(load_image(p))
    return time.perf_counter() - t0


def on_ray(paths: list[Path], solution: str, backend: str, workers: int) -> float:
    import ray

    from gpulite import batch

    t0 = time.perf_counter()
    ds = ray.data.from_items([{"path": str(p)} for p in paths])
    out = batch.map_solution(ds, solution, column="path", backend=backend, concurrency=workers, batch_size=8)
    rows = out.materialize().count()
    assert rows == len(paths)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solution", default="face_mesh")
    ap.add_argument("--images", type=int, default=96)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        paths = make_images(Path(tmp), args.images)
        t0 = time.perf_counter()
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        print(f"ray.init: {time.perf_counter() - t0:.1f} s (not counted below)")
        plain_loop(paths[:3], args.solution, args.backend)  # models into the cache, imports warm
        rows = [("plain loop", plain_loop(paths, args.solution, args.backend))]
        for workers in (1, 2):
            rows.append((f"ray, {workers} worker{'s' if workers > 1 else ''}",
                         on_ray(paths, args.solution, args.backend, workers)))
        ray.shutdown()
    base = rows[0][1]
    print(f"{args.solution}, {args.images} images, backend={args.backend}, {os.cpu_count()} CPUs")
    print(f"{'run':<16}{'seconds':>9}{'images/s':>10}{'vs loop':>9}")
    for name, s in rows:
        print(f"{name:<16}{s:>9.2f}{args.images / s:>10.1f}{base / s:>8.2f}x")


if __name__ == "__main__":
    main()
