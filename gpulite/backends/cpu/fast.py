"""numpy entry points without their Python wrappers, for the per-invoke hot path.

``np.clip`` and ``np.einsum`` are Python functions in front of a C implementation: the
ufunc ``clip`` and ``c_einsum``. Called directly (with both bounds given, and without
``optimize``, which is how the kernels call them) they compute the same thing and save
2-3 us per call, which adds up over the hundred-odd steps of a small model. If a numpy
version moves them, the public functions are used.
"""

from __future__ import annotations

import numpy as np

try:  # numpy >= 2
    from numpy._core.multiarray import c_einsum as einsum
    from numpy._core.umath import clip
except ImportError:  # pragma: no cover - numpy 1.x layout
    try:
        from numpy.core.multiarray import c_einsum as einsum
        from numpy.core.umath import clip
    except ImportError:
        einsum, clip = np.einsum, np.clip

__all__ = ["clip", "einsum"]
