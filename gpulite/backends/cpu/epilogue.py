"""What a float conv does to each chunk of its output while the chunk is in cache.

A conv kernel computes its output in chunks of whole pixels (ranges of the output seen as
(pixels, C)); :class:`Epilogue` gives, per chunk, one closure that adds the bias, applies
the conv's fused activation, then the steps :mod:`gpulite.graph.fusion` moved into the
conv (``node.epilogue``): residual ADD (with the ADD's fused activation), PRELU,
HARD_SWISH, LOGISTIC. Each step is the same numpy arithmetic as the standalone
kernel, so fusing changes no value.

Per-channel vectors (bias, PReLU slopes) are tiled T times and the chunk viewed as
(pixels / T, T*C), so that numpy's inner loop is long even when C is small.

With the compiled loops (:mod:`gpulite.backends.cpu.jit`) the steps run as one compiled pass over the
chunk instead, block by cache-sized block, when all of them are among those it knows
(everything but a run-time bias and LOGISTIC); the
float32 operations are the same, so are the values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu import jit
from gpulite.backends.cpu.fast import clip
from gpulite.backends.cpu.window import tile_count
from gpulite.graph.ir import Activation, HardSwish, Logistic, PRelu, ResidualAdd

_ZERO, _HALF, _INF, _NINF = np.float32(0), np.float32(0.5), np.float32(np.inf), np.float32(-np.inf)
TILE = 1024  # minimum inner length (elements) of a per-channel step
JIT_BLOCK = 512  # compiled pass: elements per block (rounded to whole pixels), all steps in L1
_JIT_CODES = {"bias": 0, "clip": 1, "add": 2, "prelu_max": 3, "prelu_min": 4, "prelu2": 5, "hard_swish": 6}


class Epilogue:
    """Per-chunk bias, activation and fused elementwise steps of a conv's output.

    Parameters
    ----------
    node, ctx
        The conv's node (``activation``, ``epilogue``) and context (for the
        fused steps' inputs and the shared scratch).
    out : numpy.ndarray
        The conv's output, (N, H, W, C).
    bias : numpy.ndarray or None
        Bias to add here ((C,)), or None when the GEMM adds it (or there is none).
    activation : bool
        Whether to apply ``node.activation`` (False when the kernel applies it itself).
    """

    def __init__(self, node, ctx, out: np.ndarray, bias: np.ndarray | None = None, activation: bool = True,
                 bias_const: bool = True) -> None:
        self.c = out.shape[-1]
        self.out2 = out.reshape(-1, self.c)
        self.ctx = ctx
        self._tiles: dict[tuple[int, int], np.ndarray] = {}
        self.steps: list[tuple] = []
        if bias is not None:  # a bias computed at run time is read then, broadcast per pixel
            self.steps.append(("bias", self._vector(bias)) if bias_const else ("bias_live", bias.reshape(-1)))
        bounds = node.activation.bounds(np.float32) if activation else None
        if bounds is not None:
            self.steps.append(("clip", *bounds))
        for entry in node.epilogue:
            if isinstance(entry, ResidualAdd):
                res = ctx.input(entry.slot)
                self.steps.append(("add", res.reshape(-1, entry.channels), entry.channels))
            elif isinstance(entry, Activation):
                bounds = entry.activation.bounds(np.float32)
                if bounds is not None:
                    self.steps.append(("clip", *bounds))
            elif isinstance(entry, PRelu):
                alpha = self._vector(ctx.input(entry.slot))
                if (alpha <= 1).all():
                    self.steps.append(("prelu1", alpha, np.maximum))
                elif (alpha >= 1).all():
                    self.steps.append(("prelu1", alpha, np.minimum))
                else:
                    self.steps.append(("prelu2", alpha))
            elif isinstance(entry, HardSwish | Logistic):
                self.steps.append((entry.kind,))
            else:
                raise ValueError(f"unknown epilogue step {entry!r}")

        self.program = self._compile()

    def _compile(self) -> tuple | None:
        """The steps as the compiled pass's program (codes, tiled vectors, lo, hi, period,
        residual), or None when the compiled loops are off or a step is one they do not know."""
        if not self.steps or not self.out2.flags.c_contiguous or not jit.available():
            return None
        period = self.c * max(1, JIT_BLOCK // self.c)
        codes, vecs, lo, hi, res = [], [], [], [], None
        zeros = np.zeros(period, np.float32)
        for step in self.steps:
            kind, vec, a, z = step[0], zeros, 0.0, 0.0
            if kind == "bias":
                vec = np.tile(step[1], period // self.c)
            elif kind == "clip":
                a, z = step[1], step[2]
            elif kind == "add" and res is None and step[1].flags.c_contiguous:
                res = step[1]
            elif kind == "prelu1":
                kind, vec = ("prelu_max" if step[2] is np.maximum else "prelu_min"), np.tile(step[1], period // self.c)
            elif kind == "prelu2":
                vec = np.tile(step[1], period // self.c)
            elif kind == "hard_swish":
                a, z = 3.0, 6.0
            else:
                return None
            codes.append(_JIT_CODES[kind])
            vecs.append(vec)
            lo.append(a)
            hi.append(z)
        return (np.array(codes, np.int64), np.ascontiguousarray(vecs, np.float32),
                np.array(lo, np.float32), np.array(hi, np.float32), period, res)

    def _vector(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float32).reshape(-1)
        return np.broadcast_to(v, (self.c,)).copy() if v.size == 1 else v.reshape(self.c).copy()

    def __bool__(self) -> bool:
        return bool(self.steps)

    def _tiled(self, k: int, v: np.ndarray, t: int) -> np.ndarray:
        key = (k, t)
        if key not in self._tiles:
            self._tiles[key] = np.tile(v, t)
        return self._tiles[key]

    def chunk(self, p0: int, p1: int, part: int = 0) -> Callable[[], None] | None:
        """The closure applying every step to output pixels ``p0:p1`` (None when there are none).

        ``part`` selects the scratch (one per thread) that two steps need.
        """
        if not self.steps:
            return None
        if self.program is not None:
            codes, vecs, lo, hi, period, res = self.program
            r = res[p0:p1] if res is not None else None
            return jit.epilogue_steps(self.out2[p0:p1].reshape(-1), r, codes, vecs, lo, hi, period, self.c)
        o = self.out2[p0:p1]
        flat = o.reshape(-1)
        t = tile_count(p1 - p0, self.c, TILE)
        rows = o.reshape((p1 - p0) // t, t * self.c)
        calls: list[tuple] = []
        tmp = None
        for k, step in enumerate(self.steps):
            kind = step[0]
            if kind in ("prelu2", "hard_swish") and tmp is None:
                tmp = self.ctx.scratch.get(("epilogue", part), rows.shape, np.float32)
            if kind == "bias":
                calls.append((np.add, (rows, self._tiled(k, step[1], t)), {"out": rows}))
            elif kind == "bias_live":
                calls.append((np.add, (o, step[1]), {"out": o}))
            elif kind == "clip":
                calls.append((clip, (flat, step[1], step[2]), {"out": flat}))
            elif kind == "add":
                res, channels = step[1], step[2]
                if channels == self.c:
                    calls.append((np.add, (flat, res[p0:p1].reshape(-1)), {"out": flat}))
                else:  # the residual fills the first channels (a channel PAD was folded)
                    head = o[:, :channels]
                    calls.append((np.add, (head, res[p0:p1]), {"out": head}))
            elif kind == "prelu1":  # x >= 0 ? x : a*x == max(x, a*x) when every a <= 1 (min when >= 1)
                prod = self.ctx.scratch.get(("epilogue", part), rows.shape, np.float32)
                calls.append((np.multiply, (rows, self._tiled(k, step[1], t)), {"out": prod}))
                calls.append((step[2], (rows, prod), {"out": rows}))
            elif kind == "prelu2":  # min(x, 0) * a + max(x, 0), as the PRELU kernel
                calls.append((clip, (rows, _NINF, _ZERO), {"out": tmp}))
                calls.append((np.multiply, (tmp, self._tiled(k, step[1], t)), {"out": tmp}))
                calls.append((clip, (rows, _ZERO, _INF), {"out": rows}))
                calls.append((np.add, (rows, tmp), {"out": rows}))
            elif kind == "hard_swish":  # x * relu6(x + 3) / 6, as the HARD_SWISH kernel
                tf = tmp.reshape(-1)
                calls.append((np.add, (flat, 3.0), {"out": tf}))
                calls.append((clip, (tf, 0.0, 6.0), {"out": tf}))
                calls.append((np.multiply, (tf, flat), {"out": flat}))
                calls.append((np.divide, (flat, 6.0), {"out": flat}))
            elif kind == "logistic":  # 0.5 * tanh(x / 2) + 0.5, as the LOGISTIC kernel
                calls.append((np.multiply, (flat, _HALF), {"out": flat}))
                calls.append((np.tanh, (flat,), {"out": flat}))
                calls.append((np.multiply, (flat, _HALF), {"out": flat}))
                calls.append((np.add, (flat, _HALF), {"out": flat}))

        def run() -> None:
            for fn, args, kw in calls:
                fn(*args, **kw)
        return run
