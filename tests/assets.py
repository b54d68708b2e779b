"""Where tests find their inputs: the images shipped in ``tests/data/images``, the zoo's models and
the scripts in ``benchmarks/`` (loaded as modules, for the tests of their tables).

Nothing here reads beside the checkout: models come through :func:`gpulite.zoo.resolve`, which
downloads a missing one into the cache as a user's install does (a ``shared/models`` mirror
beside the checkout is only a shortcut it may take).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

from gpulite import zoo

IMAGES = Path(__file__).resolve().parent / "data" / "images"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def image_path(name: str) -> Path:
    """A shipped test image (``astronaut.png``, ``chelsea.png`` or ``coffee.png``)."""
    path = IMAGES / name
    if not path.is_file():
        raise FileNotFoundError(f"no test image {path}; the shipped ones are "
                                f"{sorted(p.name for p in IMAGES.glob('*.png'))}")
    return path


def load_image(name: str) -> np.ndarray:
    """A shipped test image as (H, W, 3) uint8 RGB."""
    from PIL import Image

    with Image.open(image_path(name)) as im:
        return np.asarray(im.convert("RGB"))


def model_path(name: str) -> Path:
    """A zoo model's file, fetched into the cache when no copy is found."""
    return zoo.resolve(name)


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` loaded as a module (the folder is no package)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
