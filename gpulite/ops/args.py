"""Argument handling shared by the eager ops: tensors from array-likes, padding, activations, axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.environment import env
from gpulite.model import schema_gen as sg
from gpulite.tensor import Tensor, tensor

_PADDING = {"same": sg.Padding.SAME, "valid": sg.Padding.VALID}
_ACTIVATION = {None: sg.ActivationFunctionType.NONE, "relu": sg.ActivationFunctionType.RELU,
               "relu6": sg.ActivationFunctionType.RELU6, "relu_n1_to_1": sg.ActivationFunctionType.RELU_N1_TO_1}


def validating() -> bool:
    """False in prod mode (the ``prod`` flag): ops then skip their argument checks."""
    return not env().get("prod")


def as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """``x`` itself if it is a Tensor, else a new tensor of it (Python scalars take ``like``'s dtype)."""
    if isinstance(x, Tensor):
        return x
    if like is not None and isinstance(x, (int, float, bool, np.generic)):
        return tensor(np.asarray(x, like.dtype), like.dtype)
    return tensor(x)


def pair(v: Any, name: str) -> tuple[int, int]:
    """An int or a pair of ints as ``(h, w)``."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v), int(v)
    try:
        h, w = (int(a) for a in v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int or a pair of ints (h, w), got {v!r}") from None
    return h, w


def padding(p: str) -> int:
    try:
        return int(_PADDING[str(p).lower()])
    except KeyError:
        raise ValueError(f"padding must be 'same' or 'valid', got {p!r}") from None


def activation(a: str | None) -> int:
    key = a.lower() if isinstance(a, str) else a
    if key not in _ACTIVATION:
        raise ValueError(f"activation must be one of {list(_ACTIVATION)}, got {a!r}")
    return int(_ACTIVATION[key])


def axis(a: int, rank: int, name: str = "axis") -> int:
    """A normalised axis in ``0..rank-1`` (negative counts from the end)."""
    if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(a).__name__} {a!r}")
    if not -rank <= a < max(rank, 1):
        raise ValueError(f"{name} {a} is out of range for a rank-{rank} tensor")
    return int(a) % max(rank, 1)


def require_rank(t: Tensor, ranks: tuple[int, ...], what: str) -> None:
    if validating() and t.ndim not in ranks:
        raise ValueError(f"{what} expects a tensor of rank {' or '.join(map(str, ranks))}, got shape {t.shape}")


def require_dtype(t: Tensor, dtypes: tuple[Any, ...], what: str) -> None:
    if validating() and t.dtype not in {np.dtype(d) for d in dtypes}:
        raise TypeError(f"{what} expects {'/'.join(str(np.dtype(d)) for d in dtypes)}, got {t.dtype}")


def same_dtype(a: Tensor, b: Tensor, what: str) -> None:
    if validating() and a.dtype != b.dtype:
        raise TypeError(f"{what}: both inputs must have one dtype, got {a.dtype} and {b.dtype}")
