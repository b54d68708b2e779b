"""Data movement as eager ops: reshape, transpose, concat, pad, slice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gpulite.model import schema_gen as sg
from gpulite.ops import args
from gpulite.ops.dispatch import Const, run
from gpulite.tensor import Tensor


def _new_shape(shape: Sequence[int], size: int, old: tuple[int, ...]) -> tuple[int, ...]:
    dims = [int(d) for d in shape]
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"reshape: shape {list(shape)} may hold at most one -1 and no other negative size")
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot infer the -1 of {list(shape)} for {size} elements (shape {old})")
        dims[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"reshape: {old} has {size} elements, {list(shape)} holds {known}")
    return tuple(dims)


def reshape(x: Any, shape: Sequence[int]) -> Tensor:
    """``x`` with a new shape of as many elements; one dimension may be -1 (TF.js ``tf.reshape``)."""
    x = args.as_tensor(x)
    dims = _new_shape(shape, x.size, x.shape)
    return run("RESHAPE", [x, Const(np.array(dims, np.int32))], options=sg.ReshapeOptions(new_shape=dims))


def transpose(x: Any, perm: Sequence[int] | None = None) -> Tensor:
    """Permute the axes (TF.js ``tf.transpose``); default: reverse them."""
    x = args.as_tensor(x)
    p = list(range(x.ndim))[::-1] if perm is None else [args.axis(a, x.ndim, "perm entry") for a in perm]
    if sorted(p) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm {list(perm or [])} is not a permutation of the {x.ndim} axes of {x.shape}")
    return run("TRANSPOSE", [x, Const(np.array(p, np.int32))], options=sg.TransposeOptions())


def concat(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """Join tensors along ``axis`` (TF.js ``tf.concat``)."""
    if not tensors:
        raise ValueError("concat needs at least one tensor")
    ts = [args.as_tensor(t) for t in tensors]
    ax = args.axis(axis, ts[0].ndim)
    if args.validating():
        for t in ts[1:]:
            if t.dtype != ts[0].dtype or t.ndim != ts[0].ndim or any(
                    a != b for i, (a, b) in enumerate(zip(t.shape, ts[0].shape, strict=True)) if i != ax):
                raise ValueError(f"concat along axis {ax}: {t.shape} {t.dtype} does not fit {ts[0].shape} "
                                 f"{ts[0].dtype} (all but the axis must match, and the dtype)")
    return run("CONCATENATION", list(ts), options=sg.ConcatenationOptions(axis=ax))


def pad(x: Any, paddings: Sequence[Sequence[int]], constant_value: float = 0) -> Tensor:
    """Pad with ``constant_value``; ``paddings[i] = (before, after)`` for axis i (TF.js ``tf.pad``)."""
    x = args.as_tensor(x)
    p = np.asarray(paddings, np.int32)
    if p.shape != (x.ndim, 2) or (p < 0).any():
        raise ValueError(f"pad: paddings must be {x.ndim} non-negative (before, after) pairs for {x.shape}, "
                         f"got {np.asarray(paddings).tolist()}")
    if constant_value == 0:
        return run("PAD", [x, Const(p)], options=sg.PadOptions())
    value = Const(np.array(constant_value, x.dtype))
    return run("PADV2", [x, Const(p), value], options=sg.PadV2Options())


def slice(x: Any, begin: Sequence[int], size: Sequence[int]) -> Tensor:  # TF.js's name
    """The block at ``begin`` of ``size`` (-1: to the end) (TF.js ``tf.slice``)."""
    x = args.as_tensor(x)
    b, s = [int(v) for v in begin], [int(v) for v in size]
    if len(b) != x.ndim or len(s) != x.ndim:
        raise ValueError(f"slice: begin {b} and size {s} need {x.ndim} entries for {x.shape}")
    return run("SLICE", [x, Const(np.array(b, np.int32)), Const(np.array(s, np.int32))], options=sg.SliceOptions())
