"""gpulite: run .tflite models from Python on the CPU or any GPU through WebGPU."""

from gpulite.errors import (
    DeviceLimitsError,
    DeviceLostError,
    DeviceMismatchError,
    GpuliteError,
    ModelError,
    ShapeError,
    StaleTensorError,
    UnsupportedOpError,
)
from gpulite.interpreter import Interpreter, SignatureRunner

__version__ = "0.1.0"

__all__ = [
    "DeviceLimitsError", "DeviceLostError", "DeviceMismatchError", "GpuliteError", "Interpreter", "ModelError",
    "ShapeError", "SignatureRunner", "StaleTensorError", "UnsupportedOpError",
]
