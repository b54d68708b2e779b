"""The WebGPU backend: kernels as compute dispatches over one arena buffer.

``prepare`` fuses activations and PRELUs into their producers where the producer's kernel
runs them (a new graph: :func:`gpulite.graph.fusion.fuse` with :mod:`.fusion_rules`).
``compile`` asks each node's WebGPU kernel factory for its :class:`Program` list, falling
back to the CPU backend's kernel for a node without one (or whose kernel declines it),
groups the nodes into GPU and CPU partitions (:mod:`.partition`) and hands everything to
:class:`~.executable.WebGpuExecutable`, which builds the GPU objects once.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
import wgpu

from gpulite.backends.base import DeviceKind, GpuControl
from gpulite.backends.cpu.context import CpuContext, Resources
from gpulite.backends.kernels import get_kernel
from gpulite.environment import env
from gpulite.errors import UnsupportedOpError
from gpulite.graph import fusion
from gpulite.graph.ir import Graph, Node
from gpulite.graph.plan import MemoryPlan

from . import partition as pt
from .arena import GpuArena
from .context import GpuContext, NeedsF32WeightsError
from .device import GpuDevice, get_device
from .eager import WebGpuEager
from .executable import WAITS, WebGpuExecutable
from .fusion_rules import WebGpuFusionRules
from .program import KernelError, Program
from .quantized import check_mode, float_graph

log = logging.getLogger(__name__)
ENV_F16_LOADS = "GPULITE_F16_LOADS"

FP16_MEANING = ("weights and other float32 constant operands of CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, "
                "Convolution2DTransposeBias, FULLY_CONNECTED and the binary elementwise ops (biases and PReLU "
                "alphas included) stored as float16; the products of CONV_2D and FULLY_CONNECTED with constant "
                "weights and of DEPTHWISE_CONV_2D (multiplier 1, channels a multiple of 4) computed in float16 "
                "from float16-rounded inputs and accumulated in float32 (f16_math_nodes); activations stored "
                "and all other arithmetic done in float32")


def _resolve_device(device: Any) -> GpuDevice:
    """A :class:`GpuDevice` from what ``Interpreter(device=...)`` accepts."""
    if isinstance(device, GpuDevice):
        return device
    if device is None or isinstance(device, str):
        return get_device(device)
    if isinstance(device, wgpu.GPUDevice):
        return GpuDevice.wrap(device)
    raise TypeError(f"device must be a GpuDevice, a wgpu.GPUDevice or an adapter name, got {type(device).__name__}")


class WebGpuBackend:
    """Compile plans to WebGPU.

    Parameters
    ----------
    num_threads : int, optional
        Threads for nodes that fall back to the CPU backend.
    device : GpuDevice, wgpu.GPUDevice or str, optional
        A :class:`GpuDevice`; the application's own ``wgpu.GPUDevice`` (everything then runs
        on it, so outputs can be bound in the application's pipelines; gpulite never destroys
        it); or an adapter-name substring (as ``GPULITE_ADAPTER``). Default: the shared
        high-performance device.
    precision : {"fp32", "fp16"}
        ``"fp16"`` stores weights (the constant operands of the convolutions, FULLY_CONNECTED
        and the binary elementwise ops, their biases and PReLU alphas) as float16 in the arena;
        the matrix products and depthwise convolutions multiply in float16 and accumulate in
        float32; activations and all other arithmetic stay float32 (:data:`FP16_MEANING`). It needs the
        device's ``shader-f16`` feature; without it a warning is logged and the plan runs in
        fp32. :attr:`precision` is what is in force, :attr:`precision_requested` what was asked.
    cpu_ops : iterable of str
        Ops forced onto the CPU backend even when a WebGPU kernel exists (debugging, tests).
    outputs_on_gpu : bool
        Leave graph outputs in GPU memory after ``invoke`` (no readback); they are read back
        on demand by ``get_tensor``/``ensure_readable`` or used through ``get_output_gpu``.
    wait : {"passive", "active"}
        How an invoke that reads results back waits for the GPU (the TFLite GPU delegate's wait
        types): ``"passive"`` blocks until wgpu-native reports the readback mapped;
        ``"active"`` polls the device from the calling thread until then (lowest latency, one
        core busy meanwhile). An invoke with ``outputs_on_gpu=True`` and no CPU partition
        does not wait at all ("do not wait").
    quantized : {"float", "exact"}, optional
        How quantized (int8/uint8/int16) models run. ``"float"`` (the default, as the TFLite GPU
        delegate): weights dequantized at load, activations computed in float32 on the GPU,
        QUANTIZE/DEQUANTIZE at the graph's edges (:mod:`.quantized`); within a few quantization
        steps of LiteRT. ``"exact"``: LiteRT's integer arithmetic, in integer WGSL kernels where
        the GPU has them (``gpulite ops``' *webgpu exact*), on the CPU fallback elsewhere.
        Default: the ``webgpu_quantized`` flag (``GPULITE_WEBGPU_QUANTIZED``), else ``"float"``.
    """

    name = "webgpu"
    device_kind: DeviceKind = "gpu"

    def __init__(self, num_threads: int | None = None, *, device: Any = None, precision: str = "fp32",
                 cpu_ops: Any = (), outputs_on_gpu: bool = False, quantized: str | None = None,
                 wait: str = "passive") -> None:
        if precision not in ("fp32", "fp16"):
            raise ValueError(f"precision must be 'fp32' or 'fp16', got {precision!r}")
        if wait not in WAITS:
            raise ValueError(f"wait must be one of {WAITS}, got {wait!r}")
        self.wait = wait
        if not isinstance(outputs_on_gpu, bool):
            raise TypeError(f"outputs_on_gpu must be a bool, got {outputs_on_gpu!r}")
        self._request = device if device is None or isinstance(device, str) else None
        self.gdev = _resolve_device(device)
        self.num_threads = num_threads or 1
        self.precision_requested = precision
        self.precision, self.precision_note = self._precision_in_force(precision)
        self.cpu_ops = frozenset(cpu_ops)
        self.outputs_on_gpu = outputs_on_gpu
        self.quantized = check_mode(env().get("webgpu_quantized") if quantized is None else quantized)
        self._fp16_report: dict[str, Any] = {}

    def _precision_in_force(self, requested: str) -> tuple[str, str]:
        if requested == "fp32" or self.gdev.has_f16:
            return requested, ""
        note = (f"precision='fp16' was requested on {self.gdev.name}, but the device lacks the shader-f16 "
                "feature; running in fp32")
        note += " (float32 weights, activations and math)"
        log.warning(note)
        return "fp32", note

    def f16_loads(self) -> str:
        """How fp16 kernels read their float16 weights: ``"f16"`` (WGSL's f16 type, loads of
        ``vec4<f16>``) or ``"f16-packed"`` (u32 words and ``unpack2x16float``). The bytes are the
        same. Packed loads on CPU adapters, where they measured faster (lavapipe: fp16 7-16%
        faster than fp32, against a median 7% slower with f16 loads), f16 loads elsewhere;
        ``GPULITE_F16_LOADS`` (``f16`` / ``packed``) overrides."""
        env = os.environ.get(ENV_F16_LOADS, "").strip().lower()
        if env:
            if env not in ("f16", "packed"):
                raise ValueError(f"{ENV_F16_LOADS} must be 'f16' or 'packed', got {env!r}")
            return "f16" if env == "f16" else "f16-packed"
        cpu = str(self.gdev.adapter.info.get("adapter_type", "")).lower() == "cpu"
        return "f16-packed" if cpu else "f16"

    def replace_device(self, device: Any = None) -> None:
        """Compile on another device from now on (``Interpreter.recover``).

        ``None``: the shared device this backend was asked for (re-created if it was lost),
        or, when it was given the application's own device, gpulite's shared device on the
        same adapter.
        """
        if device is None:
            device = self._request if self._request is not None or self.gdev.owns_device else self.gdev.name
        self.gdev = _resolve_device(device)
        self.precision, self.precision_note = self._precision_in_force(self.precision_requested)

    def describe(self) -> dict[str, Any]:
        """Backend-level facts for ``get_plan()``: the precision in force and why; for fp16, what
        it means and how many nodes read float16 weights in the last compiled plan."""
        d: dict[str, Any] = {"precision": self.precision, "precision_requested": self.precision_requested,
                             "quantized": self.quantized}
        if self.precision_note:
            d["precision_note"] = self.precision_note
        if self.precision == "fp16":
            d["fp16"] = {"meaning": FP16_MEANING, **self._fp16_report}
        return d

    @property
    def gpu_control(self) -> GpuControl:
        return self

    def prepare(self, graph: Graph) -> Graph:
        """``graph`` fused for the WebGPU kernels: activations and PRELUs into their producers
        where those kernels run them (:mod:`.fusion_rules`); under ``quantized="float"`` its
        quantized tensors first become float32 ones (:func:`.quantized.float_graph`)."""
        if self.quantized == "float":
            graph = float_graph(graph, lambda n: n.op in self.cpu_ops or get_kernel(n.op, self.name) is None)
        return fusion.fuse(graph, WebGpuFusionRules(self.cpu_ops))

    def eager(self) -> WebGpuEager:
        return WebGpuEager(self.gdev, self.name)

    def close(self) -> None:
        """Nothing to release: compiled plans own their buffers, and the device may be shared."""

    def _gpu_work(self, n: Node, graph: Graph, plan: MemoryPlan, garena: GpuArena) -> tuple[list[Program] | None, str]:
        if n.op in self.cpu_ops:
            return None, "forced onto the cpu (cpu_ops)"
        if any(graph.tensors[o].bounded for o in n.outputs):
            return None, "its output's shape depends on the data; the cpu kernel sets it at each invoke"
        factory = get_kernel(n.op, self.name)
        if factory is None:
            return None, "no webgpu kernel"
        mark = garena.checkpoint()
        weights = self._fp16_report.get("loads", "f32")
        try:
            try:
                ctx = GpuContext(graph, n, plan, garena, self.gdev, weights=weights, quantized=self.quantized)
                out = factory(n, ctx)
            except NeedsF32WeightsError as e:  # this node keeps float32 weights
                garena.rollback(mark)
                self._fp16_report["kept_f32"].append({"node": n.index, "op": n.op, "why": str(e)})
                ctx = GpuContext(graph, n, plan, garena, self.gdev, weights="f32", quantized=self.quantized)
                out = factory(n, ctx)
        except UnsupportedOpError as e:
            garena.rollback(mark)
            return None, e.detail or str(e)
        programs = [out] if isinstance(out, Program) else list(out)
        if ctx.f16_bytes:
            misread = [p.name for p in programs if p.key[-1] != ctx.weights]
            if misread:  # a kernel stored f16 weights but built a program reading f32 ones
                raise KernelError(f"{n.op} node {n.index}: programs {misread} read float16 weights "
                                  "but were not built with weights=ctx.weights")
            self._fp16_report["nodes"] += 1
        if any(p.math == "f16" for p in programs):
            self._fp16_report["f16_math_nodes"] += 1
        return [p for p in programs if p.threads > 0], ""

    def compile(self, graph: Graph, plan: MemoryPlan) -> WebGpuExecutable:
        host = np.zeros(max(plan.arena_bytes, 64), np.uint8)
        arrays: dict[int, np.ndarray] = {}
        cpu_arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            if t.const is not None:
                cpu_arrays[t.index] = t.const
            elif t.index in plan.offsets:
                off = plan.offsets[t.index]
                arrays[t.index] = cpu_arrays[t.index] = host[off:off + t.nbytes].view(t.dtype).reshape(t.shape)
        garena = GpuArena(plan.arena_bytes)
        self._fp16_report = {"loads": self.f16_loads(), "nodes": 0, "f16_math_nodes": 0,
                                                         "kept_f32": []} if self.precision == "fp16" else {}
        steps: list[tuple[Node, str, Any]] = []
        resources = Resources()  # the resource variables the cpu kernels share (VAR_HANDLE, ...)
        fallbacks: dict[int, str] = {}  # node index -> why it runs on the cpu
        for n in graph.nodes:
            programs, why = self._gpu_work(n, graph, plan, garena)
            if programs is not None:
                steps.append((n, pt.GPU, programs))
                continue
            cpu_factory = get_kernel(n.op, "cpu")
            if cpu_factory is None:
                raise UnsupportedOpError(n.op, n.index, self.name, f"{why}; the cpu backend has no kernel either")
            log.info("node %d (%s) runs on the cpu: %s", n.index, n.op, why)
            steps.append((n, pt.CPU, cpu_factory(n, CpuContext(graph, n, cpu_arrays, self.num_threads,
                                                              resources=resources, extents=plan.extents))))
            fallbacks[n.index] = why
        parts = pt.partition(graph, plan.offsets, steps, fallbacks)
        return WebGpuExecutable(self.gdev, graph, plan, host, arrays, garena, parts,
                                outputs_on_gpu=self.outputs_on_gpu, kernels=self.name, wait=self.wait)
