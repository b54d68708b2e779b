"""Helpers for the CLI tests: the command in a fresh process, and small images made on the spot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
ASTRONAUT = ROOT / "gpulite" / "data" / "astronaut.png"  # shipped with the package (public domain)


def gpulite(*args: str, cwd: Path | None = None, hide: tuple[str, ...] = (),
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m gpulite ARGS`` in a fresh process on this checkout, on the CPU backend.

    ``hide`` names modules the process cannot import (as if not installed: ``("av",)``);
    ``env`` adds environment variables.
    """
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPULITE_")}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    e.update(GPULITE_BACKEND="cpu", PYTHONPATH=path, **(env or {}))
    if hide:  # None in sys.modules makes an import raise ImportError
        cmd = ["-c", f"import sys; sys.modules.update(dict.fromkeys({list(hide)!r})); import runpy; "
               "runpy.run_module('gpulite', run_name='__main__')"]
    else:
        cmd = ["-m", "gpulite"]
    return subprocess.run([sys.executable, *cmd, *args], cwd=cwd or ROOT, env=e, capture_output=True, text=True,
                          timeout=300)


def error_lines(stderr: str) -> list[str]:
    """stderr without progress bars."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("[")]


def gradient(h: int = 24, w: int = 32) -> np.ndarray:
    """A small RGB uint8 picture with no face in it."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), np.full_like(x, 90)], -1).astype(np.uint8)


def write_image(path: Path, rgb: np.ndarray | None = None) -> Path:
    """``rgb`` (default :func:`gradient`) saved at ``path`` in the format its extension names."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(gradient() if rgb is None else rgb).save(path)
    return path


def write_video(path: Path, frames: int = 3) -> Path:
    """A tiny video of gradients (PyAV, else OpenCV)."""
    from gpulite.pipeline.calculators.sinks import VideoWriter

    with VideoWriter(path, 10.0) as w:
        for k in range(frames):
            w.write(np.roll(gradient(48, 64), 4 * k, axis=1))
    return path
