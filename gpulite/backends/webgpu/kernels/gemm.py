"""Tiled matrix products (``gemm.wgsl``), shared by CONV_2D, FULLY_CONNECTED and BATCH_MATMUL:
how a product is cut into workgroups (:func:`plan`) and its programs (:func:`programs`).

A workgroup computes a 32 x 32 tile of the output, 4 x 4 outputs per thread, walking K 16 at a
time through workgroup memory; a product too small to fill the GPU with such tiles takes 8 x 32
tiles, 1 x 4 outputs per thread (``rpt = 1``: four times the workgroups). Where the workgroups
are still few and K is long, each runs four groups of 64 threads over interleaved K steps
(``kg = 4``, one dispatch); and no thread ever sums more than :data:`MAX_SERIAL` products of
one output: past that, K is split across workgroups into partial sums (``splits``), which a
second dispatch (``gemm_sum.wgsl``) adds up.

The 8-row tiles and the K groups spread a small product over more threads, which costs a CPU
adapter (lavapipe) CPU time and gains it nothing: there (:func:`spreads`) plans keep 32 x 32
tiles and take K groups only for K past :data:`MAX_SERIAL` (:func:`plan_for`).

With ``math="f16"`` (fp16 plans, constant weights: CONV_2D and FULLY_CONNECTED) the tiles in
workgroup memory hold f16, each product is f16 and every output accumulates in f32. Such plans
take no K groups (their hand-over moves f32 sums through the tiles): a K past
:data:`MAX_SERIAL` is cut into slices instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.model.opdefs import FusedActivation

TILE = 32  # output columns per workgroup (and rows, with 4 rows per thread)
K_STEP = 16  # K per step through workgroup memory
GROUP = 64  # threads per tile (8 x 8, 4 columns and rpt rows each)
MAX_SERIAL = 1024  # the most products one thread sums for one output
FEW_TILES = 64  # below this many 32 x 32 tiles, a thread takes 1 row instead of 4
FEW_WORKGROUPS = 128  # below this many workgroups, a long K runs in four groups per workgroup


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class GemmPlan:
    """The cut of ``batches`` products [m x k] x [k x n] into workgroups."""

    m: int
    n: int
    k: int
    batches: int
    rpt: int  # output rows per thread: 4, or 1 for small products (tiles of 8 x 32)
    kg: int  # groups of 64 threads per workgroup, each on every kg-th K step
    splits: int  # slices of K across workgroups (partial sums, then gemm_sum.wgsl)

    @property
    def tiles_m(self) -> int:
        return _cdiv(self.m, 8 * self.rpt)

    @property
    def tiles_n(self) -> int:
        return _cdiv(self.n, TILE)

    @property
    def n_pad(self) -> int:
        return self.tiles_n * TILE

    @property
    def n4(self) -> int:
        """Columns rounded up to whole vec4s: packed B's and the bias's width."""
        return _cdiv(self.n, 4) * 4

    @property
    def kt_total(self) -> int:
        return max(1, _cdiv(self.k, K_STEP))

    @property
    def k_pad(self) -> int:
        return self.kt_total * K_STEP

    @property
    def k_tiles(self) -> int:
        """K steps per slice."""
        return _cdiv(self.kt_total, self.splits)

    @property
    def workgroups(self) -> int:
        return self.tiles_m * self.tiles_n * self.batches * self.splits

    @property
    def serial(self) -> int:
        """The most products one thread sums for one output (before the groups' and slices' sums)."""
        return _cdiv(self.k_tiles, self.kg) * K_STEP

    def describe(self) -> str:
        return (f"{self.workgroups} workgroups x {GROUP * self.kg} threads, {self.rpt}x4 outputs and <= {self.serial}"
                f" products per thread{f', K in {self.splits} slices' if self.splits > 1 else ''}")


def spreads(gdev: Any) -> bool:
    """Whether small products are spread over more threads on ``gdev``: not on a CPU adapter."""
    return str(gdev.adapter.info.get("adapter_type", "")).lower() != "cpu"


def plan_for(ctx: GpuContext, m: int, n: int, k: int, batches: int = 1, *, math: str = "f32") -> GemmPlan:
    """:func:`plan` for the kernel factory's device (and the ``math`` its programs will use)."""
    return plan(m, n, k, batches, spread=spreads(ctx.gdev), groups=math == "f32")


def plan(m: int, n: int, k: int, batches: int = 1, *, spread: bool = True, groups: bool = True) -> GemmPlan:
    """The workgroups of a product. With ``spread``: one row per thread when 32 x 32 tiles would
    be fewer than :data:`FEW_TILES`, and four groups per workgroup when workgroups are fewer
    than :data:`FEW_WORKGROUPS` and K spans 8 steps or more. Always four groups when K is longer
    than :data:`MAX_SERIAL`, and slices of K across workgroups only when one workgroup's groups
    would still leave a thread more than :data:`MAX_SERIAL` products. Without ``groups`` (f16
    math) never four groups: slices alone keep that bound."""
    rpt = 1 if spread and _cdiv(m, TILE) * _cdiv(n, TILE) * batches < FEW_TILES else 4
    tiles = _cdiv(m, 8 * rpt) * _cdiv(n, TILE) * batches
    kt = max(1, _cdiv(k, K_STEP))
    kg = 4 if groups and ((spread and tiles < FEW_WORKGROUPS and kt >= 8) or kt * K_STEP > MAX_SERIAL) else 1
    per_slice = kg * MAX_SERIAL // K_STEP  # K steps one slice may take
    splits = _cdiv(kt, per_slice)
    splits = _cdiv(kt, _cdiv(kt, splits))  # no empty slice
    return GemmPlan(m, n, k, batches, rpt, kg, splits)


def packed_b(b: np.ndarray, p: GemmPlan) -> np.ndarray:
    """A constant [k, n] B as gemm_weights.wgsl reads it: [k, n4] float32, columns zero-padded
    to whole vec4s (the tiles' edges are checked, not padded: no memory for zeros)."""
    out = np.zeros((p.k, p.n4), np.float32)
    out[:, :p.n] = b
    return out


def padded_bias(bias: np.ndarray, p: GemmPlan) -> np.ndarray:
    """A bias of ``p.n`` values as gemm_weights.wgsl reads it: ``p.n4`` float32, zero-padded."""
    out = np.zeros(p.n4, np.float32)
    out[:p.n] = bias
    return out


def programs(ctx: GpuContext, name: str, sources: tuple[str, ...], p: GemmPlan, params: list[tuple[str, str, Any]],
             *, act: FusedActivation = FusedActivation.NONE, weights: str = "f32", math: str = "f32",
             **subs: str) -> list[Program]:
    """The dispatches of product ``p``: ``sources`` (before ``gemm.wgsl``) define ``mm_a``,
    ``mm_b`` and ``mm_out`` over ``params``; the gemm fields come first. ``math="f16"`` needs a
    plan without K groups (:func:`plan_for` with the same ``math``)."""
    if math == "f16" and p.kg > 1:
        raise ValueError(f"{name}: f16 math needs a plan without K groups, got kg={p.kg}")
    part = ctx.scratch((p.splits * p.batches * p.m * p.n_pad,)).offset if p.splits > 1 else 0
    fields = [("m", "u32", p.m), ("n_cols", "u32", p.n), ("k", "u32", p.k), ("n_pad", "u32", p.n_pad),
              ("n4", "u32", p.n4), ("batches", "u32", p.batches), ("tiles_m", "u32", p.tiles_m),
              ("tiles_n", "u32", p.tiles_n),
              ("kt_total", "u32", p.kt_total), ("k_tiles", "u32", p.k_tiles), ("splits", "u32", p.splits),
              ("part_off", "u32", part), *params]
    wg = GROUP * p.kg
    main = make_program(f"{name} [{p.describe()}]", (*sources, "gemm"), fields, p.workgroups, act=act,
                        workgroup_size=wg, weights=weights, groups=True, reduction_per_thread=p.serial, math=math,
                        KG=str(p.kg), RPT=str(p.rpt), SLOTS_A=str(32 * p.rpt * p.kg),
                        SLOTS_B=str(128 * p.kg), **subs)
    if p.splits == 1:
        return [main]
    total = make_program(f"{name} [sum of {p.splits} K slices]", (*sources, "gemm_sum"), fields,
                         p.batches * p.m * p.n_pad // 4, act=act, weights=weights,
                         reduction_per_thread=p.splits, **subs)
    return [main, total]
