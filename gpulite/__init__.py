"""gpulite: run .tflite models from Python on the CPU or any GPU through WebGPU.

Besides the ``tflite_runtime``-compatible :class:`Interpreter`, gpulite has TF.js's runtime
API (see docs/environment.md): backends (``set_backend``, ``register_backend``, ...),
kernels (``register_kernel``, ``copy_kernels``; op names are :class:`Op` members, a custom op of
your own is declared with ``declare_custom_op``), flags (``env()``), eager tensors
(``tensor``, :mod:`gpulite.ops`) and their memory management (``tidy``, ``keep``,
``memory``, ``profile``, ``time``).

``gpulite.solutions`` (imported on first use) has MediaPipe's legacy ``mp.solutions`` modules, so
MediaPipe 0.10.x code switches with ``import gpulite as mp`` (docs/solutions.md); likewise
``gpulite.tasks`` is ``mp.tasks`` of mediapipe 1.2.2 (``mp.tasks.vision.FaceLandmarker``, docs/tasks.md).
"""

from typing import Any

from gpulite import ops
from gpulite.backends.kernels import copy_kernels, get_kernels_for_backend, register_kernel, unregister_kernel
from gpulite.backends.registry import register_backend
from gpulite.engine import dispose, keep, memory, profile, tidy, time
from gpulite.environment import enable_debug_mode, enable_prod_mode, env
from gpulite.errors import (
    BackendError,
    BackendNotFoundError,
    ConcurrentUseError,
    DeviceLimitsError,
    DeviceLostError,
    DeviceMismatchError,
    DisposedTensorError,
    FlagError,
    GpuliteError,
    ModelError,
    NaNError,
    OutOfMemoryError,
    ShapeError,
    StaleTensorError,
    UnsupportedOpError,
)
from gpulite.interpreter import Interpreter, SignatureRunner
from gpulite.model.opdefs import FusedActivation, Op, declare_custom_op
from gpulite.runtime import (
    backend_choice,
    find_backend,
    get_backend,
    list_backends,
    ready,
    remove_backend,
    set_backend,
)
from gpulite.tensor import Tensor, tensor
from gpulite.version import __version__ as __version__


def __getattr__(name: str) -> Any:
    """``gpulite.solutions`` on first use, so ``import gpulite as mp; mp.solutions.hands`` works and
    ``import gpulite`` does not load the pipeline; MediaPipe's ``mp.tasks`` and ``mp.Image`` /
    ``mp.ImageFormat`` (gpulite.tasks), imported on first use too."""
    if name == "solutions":
        import gpulite.solutions as solutions

        return solutions
    if name == "tasks":
        import gpulite.tasks as tasks

        return tasks
    if name in ("Image", "ImageFormat"):
        import importlib

        return getattr(importlib.import_module("gpulite.tasks.vision.core.image"), name)
    raise AttributeError(f"module 'gpulite' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "solutions", "tasks", "Image", "ImageFormat"})


__all__ = [
    "BackendError", "BackendNotFoundError", "ConcurrentUseError", "DeviceLimitsError", "DeviceLostError",
    "DeviceMismatchError", "DisposedTensorError", "FlagError", "FusedActivation", "GpuliteError", "Image",
    "ImageFormat", "Interpreter",
    "ModelError", "NaNError", "Op", "OutOfMemoryError", "ShapeError", "SignatureRunner", "StaleTensorError", "Tensor",
    "UnsupportedOpError", "backend_choice", "copy_kernels", "declare_custom_op", "dispose", "enable_debug_mode",
    "enable_prod_mode", "env", "find_backend", "get_backend", "get_kernels_for_backend", "keep", "list_backends",
    "memory", "ops", "profile", "ready", "register_backend", "register_kernel", "remove_backend", "set_backend",
    "tensor", "tidy", "time", "unregister_kernel",
]
