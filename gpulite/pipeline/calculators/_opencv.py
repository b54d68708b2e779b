"""The ``cv2`` module the CPU image calculators use, with its version checked once.

MediaPipe's CPU graphs crop, warp and resize with OpenCV; gpulite makes the same calls.
OpenCV 4.10 and 4.11 give the same bytes as the OpenCV 3.4 that mediapipe 0.10.14 links
(``warpPerspective`` and ``warpAffine`` at 1/32-pixel positions, float ``resize``); 4.12
resizes floats 1 ulp apart, 4.14 and 5.x warp differently (other rounding, up to several grey
levels). Another version still works, with a warning that results may stray from MediaPipe's.

Usage::

    from gpulite.pipeline.calculators._opencv import cv2
"""

from __future__ import annotations

import warnings

try:
    import cv2
except ImportError as e:  # pragma: no cover - a broken install
    raise ImportError("gpulite's image calculators need OpenCV: pip install 'opencv-python-headless>=4.10.0.84,<4.12' "
                      f"({e})") from e

TESTED = ((4, 10), (4, 11))  # (major, minor) releases whose results match mediapipe 0.10.14's
MAX_SIDE = 32766  # cv2.warpPerspective / warpAffine refuse images with a side of SHRT_MAX or more


def untested(version: str) -> bool:
    """Whether an OpenCV ``version`` string ("4.11.0") is outside the releases in :data:`TESTED`."""
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) not in TESTED
    except (IndexError, ValueError):
        return True


if untested(cv2.__version__):
    warnings.warn(f"gpulite: OpenCV {cv2.__version__} is installed; gpulite's crops and masks match MediaPipe's bit "
                  "for bit with OpenCV 4.10-4.11 (other releases round warps differently): "
                  "pip install 'opencv-python-headless>=4.10.0.84,<4.12'", RuntimeWarning, stacklevel=2)

__all__ = ["MAX_SIDE", "TESTED", "cv2", "untested"]
