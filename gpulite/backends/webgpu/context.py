"""What a WebGPU kernel factory sees: tensor references into the arena, and node metadata.

Kernel factory contract (see docs/webgpu.md)::

    @register_kernel(Op.ADD, "webgpu")
    def add(node: Node, ctx: GpuContext) -> Program | list[Program]:
        a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)   # TensorRef: word offset + shape
        ...
        return make_program(f"add {a.shape}+{b.shape}", "binary", params, out.size, act=node.activation)

Raise ``ctx.unsupported("why")`` for a case the kernel does not handle: the node then runs
on the CPU backend instead (a partition crossing), or fails if the CPU has no kernel either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from gpulite.backends.base import KernelContext
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.plan import MemoryPlan

from .arena import GpuArena

NHWC = "NHWC"
T = TypeVar("T")
F16_MAX = 65504.0  # the largest finite float16


class NeedsF32WeightsError(Exception):
    """Raised by :meth:`GpuContext.weight` in an fp16 plan for a constant float16 cannot hold
    (a finite value beyond +-65504); the backend then builds the node again with f32 weights."""


@dataclass(frozen=True)
class TensorRef:
    """A tensor as a kernel addresses it.

    Attributes
    ----------
    offset : int
        Offset of element 0 in 4-byte words from the start of the arena buffer.
    shape : tuple of int
        Logical (TFLite) shape.
    dtype : numpy dtype
    layout : str
        How elements are laid out. Only ``"NHWC"`` (dense, row-major, the TFLite order)
        exists today; a ``"PHWC4"`` layout (channels in slices of 4) is the planned next
        one, and kernels check ``layout`` so they cannot silently misread it.
    """

    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype
    layout: str = NHWC

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class GpuContext(KernelContext):
    """Per-node view of the graph for a kernel factory; see the module docstring."""

    def __init__(self, graph: Graph, node: Node, plan: MemoryPlan, arena: GpuArena, gdev: Any, *,
                 weights: str = "f32", quantized: str = "float") -> None:
        super().__init__(graph, node)
        self.plan, self.arena, self.gdev = plan, arena, gdev
        self._weights = weights
        # The backend's quantized mode: under "exact" a kernel runs LiteRT's integer arithmetic
        # or declines (the node then runs LiteRT's on the CPU), never approximating it in float.
        self.quantized = quantized
        self.f16_bytes = 0  # bytes this node stored as float16 through weight()/weight_input()

    @property
    def weights(self) -> str:
        """How :meth:`weight` stores constants: ``"f32"``, or float16 in an fp16 plan (``"f16"`` or
        ``"f16-packed"``: the same bytes, read in two ways; program.py). Pass it to
        ``make_program(..., weights=ctx.weights)`` of every program that reads them."""
        return self._weights

    @property
    def math(self) -> str:
        """What the kernels that can compute in f16 (the matrix product with constant weights,
        the register-blocked depthwise) multiply in: ``"f16"`` where the node's weights are
        float16 (an fp16 plan) and the device has shader-f16 (WGSL's ``enable f16;``), else
        ``"f32"``. Pass it to their ``make_program(..., math=ctx.math)``; accumulation stays f32."""
        return "f16" if self._weights != "f32" and "shader-f16" in self.gdev.device.features else "f32"

    def _ref(self, t: TensorInfo) -> TensorRef:
        if t.const is not None:
            off = self.arena.add_constant(t.const, key=("tensor", t.index))
        elif t.index in self.plan.offsets:
            off = self.plan.offsets[t.index]
        else:
            raise self.unsupported(f"tensor {t.index} ({t.name!r}) has no storage in the plan")
        return TensorRef(off // 4, tuple(t.shape), t.dtype)

    def input(self, i: int) -> TensorRef:
        """Input i in the arena (a constant is uploaded once, on first reference)."""
        return self._ref(self.in_info(i))

    def output(self, i: int) -> TensorRef:
        return self._ref(self.out_info(i))

    def upload(self, data: np.ndarray) -> TensorRef:
        """Store a pre-transformed constant (e.g. re-laid-out weights) and address it."""
        data = np.ascontiguousarray(data)
        return TensorRef(self.arena.add_constant(data) // 4, tuple(data.shape), data.dtype)

    def scratch(self, shape: tuple[int, ...]) -> TensorRef:
        """Float32 working memory only this node's programs use (zeros at first; e.g. values one
        dispatch hands the next within an invoke). It lives beside the constants, which nothing
        writes, so no other tensor shares it."""
        return self.upload(np.zeros(shape, np.float32))

    def weight(self, data: np.ndarray, key: Any = None) -> TensorRef:
        """Store a float constant the kernel reads with ``wt(i)`` / ``wt4(i)`` (weights, biases,
        constant operands), in :attr:`weights` format.

        fp32 plans store float32 and ``offset`` is in 4-byte words, as :meth:`upload`. fp16
        plans store IEEE float16 (rounded to nearest even) and ``offset`` counts 2-byte
        elements, so ``wt(P.w_off + k)`` and ``wt4(P.w_off / 4u + k)`` address both alike.
        ``key`` deduplicates, as for graph constants.

        Raises
        ------
        NeedsF32WeightsError
            fp16 only: a finite value beyond float16's range (the node is built again in f32).
        """
        data = np.ascontiguousarray(data, dtype=np.float32)
        if self._weights == "f32":
            return TensorRef(self.arena.add_constant(data, key=key) // 4, tuple(data.shape), data.dtype)
        finite = np.abs(data[np.isfinite(data)])
        if finite.size and float(finite.max()) > F16_MAX:
            raise NeedsF32WeightsError(f"a constant holds {float(finite.max()):g}, beyond float16's {F16_MAX:g}")
        half = data.astype(np.float16)
        self.f16_bytes += half.nbytes
        off = self.arena.add_constant(half, key=None if key is None else (*key, "f16"))
        return TensorRef(off // 2, tuple(half.shape), half.dtype)

    def weight_input(self, i: int) -> TensorRef:
        """Constant input ``i`` through :meth:`weight` (stored once per format, deduplicated)."""
        c = self.const(i)
        if c is None:
            raise self.unsupported(f"input {i} is computed at run time (expected a constant)")
        return self.weight(c, key=("tensor", self.node.inputs[i]))

    def unsupported(self, why: str) -> UnsupportedOpError:
        """The error to raise for a case this kernel does not handle (caller raises it)."""
        return UnsupportedOpError(self.node.op, self.node.index, "webgpu", why)

    def options(self, cls: type[T]) -> T:
        """The node's options as a ``cls`` (a custom op's are decoded by the reader at load);
        the unsupported error if they are not one."""
        opts = self.node.options
        if not isinstance(opts, cls):
            raise self.unsupported(f"expected {cls.__name__} options, got {type(opts).__name__}")
        return opts

    def require_f32(self, *refs: TensorRef) -> None:
        """Raise the unsupported error unless every ref is float32 NHWC."""
        self.require_dtypes(refs, (np.float32,))

    def require_dtypes(self, refs: Any, dtypes: tuple, what: str = "this kernel") -> None:
        """Raise the unsupported error unless every ref is NHWC with a dtype in ``dtypes``."""
        allowed = {np.dtype(d) for d in dtypes}
        for r in refs:
            if r.dtype not in allowed:
                names = "/".join(sorted(str(d) for d in allowed))
                raise self.unsupported(f"dtype {r.dtype} ({what} takes {names})")
            if r.layout != NHWC:
                raise self.unsupported(f"layout {r.layout}")

    def require_quant_free(self, *indices: int, outputs: tuple[int, ...] = (0,)) -> None:
        """Decline quantized tensors (inputs ``indices``, outputs ``outputs``): the kernels that
        call this compute in float32 or plain int32 and know nothing of scales."""
        for kind, idx, info in [("input", i, self.in_info) for i in indices] + [
                ("output", i, self.out_info) for i in outputs]:
            q = info(idx).quant
            if q is not None and np.size(q.scale) and np.dtype(info(idx).dtype).kind in "iu":
                raise self.unsupported(f"quantized {info(idx).dtype} {kind} {idx} (no WebGPU integer kernels)")

    def require_same_quant(self, i: int = 0, o: int = 0) -> None:
        """Decline unless input ``i`` and output ``o`` share their quantization (or have none):
        a data-movement kernel copies codes and cannot requantize."""
        qa, qb = self.in_info(i).quant, self.out_info(o).quant

        def params(q: Any) -> tuple:
            if q is None or not np.size(q.scale):
                return ()
            return (tuple(np.asarray(q.scale, np.float32).ravel()), tuple(np.asarray(q.zero_point).ravel()))
        if params(qa) != params(qb):
            raise self.unsupported("input and output quantization differ (no WebGPU requantizing kernels)")

    def element_bytes(self, *refs: TensorRef) -> int:
        """The common element size of ``refs`` for data movement (1, 2, 4 or 8 bytes: complex64
        too), declining mixed sizes, other layouts and anything that is not a plain number
        (strings, ...)."""
        sizes = set()
        for r in refs:
            if r.layout != NHWC:
                raise self.unsupported(f"layout {r.layout}")
            if r.dtype.kind not in "biufc" or r.dtype.itemsize not in (1, 2, 4, 8):
                raise self.unsupported(f"dtype {r.dtype}")
            sizes.add(r.dtype.itemsize)
        if len(sizes) != 1:
            raise self.unsupported(f"dtypes {[str(r.dtype) for r in refs]} differ in size")
        return sizes.pop()
