"""The Python side of ``wgsl/qmath.wgsl``: packed-code load names and requantization multipliers.

A kernel with LiteRT's integer arithmetic includes ``qmath.wgsl`` (programs with
``word="u32"``), reads narrow codes with the function :func:`load_fn` names, and gets its
rescale factors as Q31 multipliers and shifts from TFLite's ``QuantizeMultiplier``
(:func:`gpulite.backends.cpu.quant.quantize_multiplier`, the one definition): one pair as two
``i32`` uniforms (:func:`multiplier_params`), or one per channel as a table in the arena
(:func:`multiplier_table`, read in WGSL as ``bitcast<i32>(buf[off + 2u * c])`` and
``bitcast<i32>(buf[off + 2u * c + 1u])``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.backends.cpu.quant import QRANGE, quantize_multiplier

_LOADS = {np.dtype(np.int8): "q_load_i8", np.dtype(np.uint8): "q_load_u8", np.dtype(np.int16): "q_load_i16",
          np.dtype(np.int32): "q_load_i32"}
# qmath.wgsl's rescales take shifts in these ranges (the single and int64 forms shift right by
# 31 - shift and 15 - shift, at least 1).
SHIFTS = {"double": (-31, 31), "single": (-31, 30), "int64": (-47, 14)}


def load_fn(dtype: Any) -> str:
    """The qmath.wgsl function reading element ``e`` of a tensor of ``dtype``: ``q_load_i8(off, e)``..."""
    return _LOADS[np.dtype(dtype)]


def codes_per_word(dtype: Any) -> int:
    """How many codes of ``dtype`` one u32 word holds (4, 2 or 1)."""
    return 4 // np.dtype(dtype).itemsize


def qrange(dtype: Any) -> tuple[int, int]:
    """The code range of int8, uint8 or int16."""
    return QRANGE[np.dtype(dtype)]


def multiplier(real: float, form: str = "double") -> tuple[int, int]:
    """``(multiplier, shift)`` of ``real`` (TFLite's ``QuantizeMultiplier``), checked to fit the
    rescale ``form`` of qmath.wgsl (``"double"``: ``q_mbqm``, ``"single"``: ``q_mbqm_single64``,
    ``"int64"``: ``q_mbqm_i64``).

    Raises
    ------
    ValueError
        For a factor whose shift that form cannot apply (it is 2**30 or more, or negative).
    """
    if not real >= 0.0:
        raise ValueError(f"rescale factor {real!r} is not a non-negative number")
    m, s = quantize_multiplier(float(real))
    lo, hi = SHIFTS[form]
    if m and not lo <= s <= hi:
        raise ValueError(f"rescale factor {real:g} needs shift {s}, outside {lo}..{hi} ({form} rounding)")
    return m, s


def multiplier_params(prefix: str, real: float, form: str = "double") -> list[tuple[str, str, int]]:
    """Uniform fields ``<prefix>_m`` and ``<prefix>_shift`` (``i32``) for ``make_program``'s params."""
    m, s = multiplier(real, form)
    return [(f"{prefix}_m", "i32", m), (f"{prefix}_shift", "i32", s)]


def multiplier_table(ctx: Any, reals: Any, form: str = "double") -> Any:
    """Per-channel ``(multiplier, shift)`` pairs uploaded as int32 ``[m0, s0, m1, s1, ...]``;
    returns the ``TensorRef`` (its ``offset`` in words)."""
    pairs = [multiplier(float(r), form) for r in np.asarray(reals, np.float64).reshape(-1)]
    return ctx.upload(np.array(pairs, np.int32).reshape(-1))
