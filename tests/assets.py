"""Where tests find their inputs: the images shipped in ``tests/data/images`` and the zoo's models.

Nothing here reads beside the checkout: models come through :func:`gpulite.zoo.resolve`, which
downloads a missing one into the cache as a user's install does (a ``shared/models`` mirror
beside the checkout is only a shortcut it may take).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpulite import zoo

IMAGES = Path(__file__).resolve().parent / "data" / "images"


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
