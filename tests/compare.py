"""Compare gpulite's outputs with the reference's: shape and dtype exactly, then values."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def assert_same(actual: np.ndarray, expected: np.ndarray, *, rtol: float = 1e-5, int_tol: int = 0,
                what: str = "") -> None:
    """Assert ``actual`` matches the reference ``expected``.

    Parameters
    ----------
    actual, expected : ndarray
        Shape and dtype must be identical; nothing is cast.
    rtol : float
        Floats: ``max|actual - expected| <= rtol * max(1, max|expected|)``. One scale for the
        whole tensor, so small elements of a large-valued tensor are not held to a tighter
        bound than the float format gives the large ones.
    int_tol : int
        Integers and bools: ``max|actual - expected| <= int_tol`` (quantized ops round).
    what : str
        Names the compared tensor in the failure message.

    Raises
    ------
    AssertionError
        Naming the mismatch; for values, the worst index and both values there.
    """
    label = f"{what}: " if what else ""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        raise AssertionError(f"{label}shape {actual.shape} != expected {expected.shape}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"{label}dtype {actual.dtype} != expected {expected.dtype}")
    if actual.size == 0:
        return
    kind = expected.dtype.kind
    if kind in "fc":
        nan_a, nan_e = np.isnan(actual), np.isnan(expected)
        if not np.array_equal(nan_a, nan_e):
            i = np.unravel_index(np.argmax(nan_a != nan_e), actual.shape)
            raise AssertionError(f"{label}NaN mismatch at index {tuple(map(int, i))}: got {actual[i]}, "
                                 f"expected {expected[i]}")
        a = np.where(nan_a, 0, actual).astype(np.complex128 if kind == "c" else np.float64)
        e = np.where(nan_e, 0, expected).astype(a.dtype)
        inf_e = np.isinf(e)
        if np.any(inf_e):
            bad = inf_e & (a != e)
            if np.any(bad):
                i = np.unravel_index(np.argmax(bad), actual.shape)
                raise AssertionError(f"{label}infinity mismatch at index {tuple(map(int, i))}: got {actual[i]}, "
                                     f"expected {expected[i]}")
            a, e = np.where(inf_e, 0, a), np.where(inf_e, 0, e)
        diff = np.abs(a - e)
        bound = rtol * max(1.0, float(np.abs(e).max()))
    elif kind in "biu":
        diff = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
        if expected.dtype == np.uint64:  # int64 cannot hold every uint64: compare as Python ints
            diff = np.array([abs(int(x) - int(y)) for x, y in zip(actual.ravel(), expected.ravel(), strict=False)],
                            dtype=object).reshape(actual.shape)
        bound = int_tol
    else:
        if not np.array_equal(actual, expected):
            raise AssertionError(f"{label}values differ (dtype {expected.dtype})")
        return
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    if diff[worst] > bound:
        n_bad = int(np.count_nonzero(diff > bound))
        raise AssertionError(
            f"{label}max |diff| {diff[worst]} > allowed {bound} at index {tuple(map(int, worst))}: "
            f"got {actual[worst]!r}, expected {expected[worst]!r} ({n_bad} of {diff.size} elements out of tolerance)"
        )


def assert_close_to_litert(actual: np.ndarray, expected: np.ndarray, other: Callable[[], np.ndarray], *,
                           rtol: float = 1e-4, int_tol: int = 0, what: str = "") -> None:
    """:func:`assert_same`, or, where LiteRT disagrees with itself, within twice that disagreement.

    ``expected`` comes from LiteRT's default path (XNNPACK); ``other()`` returns the same tensor
    from LiteRT's other CPU kernels (its builtin kernels), and is called only when ``actual``
    misses the bound. When LiteRT's two paths differ by more than half the bound, the tensor is
    ill-conditioned and rounding alone moves it that far; ``actual`` must then be within twice
    LiteRT's own difference, measured in the same run. A wrong kernel still fails.
    """
    try:
        assert_same(actual, expected, rtol=rtol, int_tol=int_tol, what=what)
    except AssertionError:
        kind = expected.dtype.kind
        if kind not in "fiu" or actual.shape != expected.shape or actual.dtype != expected.dtype:
            raise
        bound = rtol * max(1.0, float(np.abs(expected).max())) if kind == "f" else int_tol
        spread = float(np.abs(other().astype(np.float64) - expected.astype(np.float64)).max())
        if 2 * spread <= bound:
            raise  # LiteRT agrees with itself here: the difference is gpulite's
        err = float(np.abs(actual.astype(np.float64) - expected.astype(np.float64)).max())
        assert err <= 2 * spread, (
            f"{what}: max |diff| {err} > 2 x {spread}, LiteRT's own XNNPACK-vs-builtin difference "
            "(the output is ill-conditioned, but not this much)"
        )
