"""Run one backend kernel eagerly: build a one-node graph, compile it once, run it.

Each call to an op in :mod:`gpulite.ops` becomes ``run(op, slots, options=...)``. The slots
are the TFLite op's inputs in order: a :class:`~gpulite.tensor.Tensor` (a run-time input),
:class:`Const` (an option array such as axes or a permutation, compiled in by value) or
:class:`Weight` (a tensor compiled in as a constant, as a model's weights are: conv filters,
whose kernels re-lay them out once). The compiled op is cached per (backend, op, input
shapes and dtypes, constants, options); a tensor used as a weight keys by its id, and its
``dispose()`` evicts the entries it keys. The cache itself is :mod:`gpulite.runtime`'s.

On a GPU backend whose kernel declines an op (or has none), the CPU kernel runs it instead
(logged once per cached op); its output belongs to the GPU backend and is uploaded on first
GPU use.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite import engine, instrument, runtime
from gpulite.backends.base import EagerExecutor
from gpulite.backends.cpu.eager import CpuEager
from gpulite.environment import env
from gpulite.errors import NaNError, UnsupportedOpError
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.shapes import propagate
from gpulite.model.opdefs import FusedActivation
from gpulite.runtime import CachedOp
from gpulite.tensor import Tensor, from_gpu, from_host

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Const:
    """An option array compiled into the op by value (axes, sizes, permutations, pad amounts)."""

    value: np.ndarray

    def key(self) -> tuple:
        v = np.ascontiguousarray(self.value)
        return ("c", v.shape, v.dtype.str, v.tobytes())


@dataclass(frozen=True)
class Weight:
    """A tensor compiled into the op as a constant, keyed by the tensor's id (conv filters, biases)."""

    tensor: Tensor


_fallback_exe: EagerExecutor | None = None


def _fallback() -> EagerExecutor:
    global _fallback_exe
    if _fallback_exe is None:
        _fallback_exe = CpuEager("cpu", num_threads=env().get("num_threads"))
    return _fallback_exe


def _slot_key(s: Any) -> Any:
    if s is None:
        return None
    if isinstance(s, Tensor):
        return ("t", s.shape, s.dtype.str)
    if isinstance(s, Const):
        return s.key()
    return ("w", s.tensor.id, s.tensor.shape, s.tensor.dtype.str)


def build_graph(op: str, slots: list[Any], options: Any, out_dtype: np.dtype) -> Graph:
    """The one-node graph of ``op`` over ``slots``; the output shape comes from the op's shape rule.

    Raises
    ------
    ShapeError
        When the inputs' shapes do not fit the op.
    """
    tensors: list[TensorInfo] = []
    ins, runtime = [], []
    for k, s in enumerate(slots):
        if s is None:
            ins.append(-1)
            continue
        i = len(tensors)
        if isinstance(s, Tensor):
            tensors.append(TensorInfo(i, f"input{k}", s.shape, s.dtype))
            runtime.append(i)
        else:
            value = s.value if isinstance(s, Const) else np.ascontiguousarray(s.tensor.host())
            tensors.append(TensorInfo(i, f"const{k}", tuple(value.shape), value.dtype, const=value))
        ins.append(i)
    out = len(tensors)
    tensors.append(TensorInfo(out, "output", (), np.dtype(out_dtype)))
    act = FusedActivation.of_options(options)
    node = Node(0, op, tuple(ins), (out,), options=options, activation=act)
    g = Graph(tensors, [node], tuple(runtime), (out,), name=op.lower())
    propagate(g, [node])
    return g


def _compile(exe: EagerExecutor, op: str, slots: list[Any], options: Any, out_dtype: np.dtype) -> CachedOp:
    graph = build_graph(op, slots, options, out_dtype)
    out = graph.tensors[graph.outputs[0]]
    weights = tuple(s.tensor.id for s in slots if isinstance(s, Weight))
    try:
        return CachedOp(exe, exe.compile(graph), out.shape, out.dtype, exe.name, weights)
    except UnsupportedOpError as e:
        if exe.device_kind != "gpu":
            raise
        log.info("eager %s %s runs on the cpu: %s", op, [s.shape for s in slots if isinstance(s, Tensor)], e)
    cpu = _fallback()
    return CachedOp(cpu, cpu.compile(graph), out.shape, out.dtype, exe.name, weights)


def _cached(exe: EagerExecutor, op: str, slots: list[Any], options: Any, out_dtype: np.dtype) -> CachedOp:
    key = (exe.name, id(exe), op, tuple(_slot_key(s) for s in slots), options, np.dtype(out_dtype).str)
    entry = runtime.cached_op(key, lambda: _compile(exe, op, slots, options, out_dtype))
    for s in slots:
        if isinstance(s, Weight):
            s.tensor._used_as_weight = True
    return entry


def run(op: str, slots: list[Any], *, options: Any = None, out_dtype: Any = None) -> Tensor:
    """Run ``op`` eagerly on the active backend; see the module docstring.

    Parameters
    ----------
    op : str
        The TFLite op name (``"CONV_2D"``).
    slots : list
        The op's inputs in TFLite order: ``Tensor``, ``Const``, ``Weight`` or None (omitted).
    options : schema_gen options dataclass, optional
    out_dtype : numpy dtype, optional
        Default: the first tensor input's dtype.
    """
    tensors = [s for s in slots if isinstance(s, Tensor)]
    for s in slots:
        t = s if isinstance(s, Tensor) else s.tensor if isinstance(s, Weight) else None
        if t is not None:
            t._check(f"ops {op}")
    if out_dtype is None:
        out_dtype = tensors[0].dtype if tensors else slots[0].tensor.dtype
    exe = runtime.eager_executor()
    entry = _cached(exe, op, slots, options, out_dtype)
    (debug, check), profiling = instrument.checks(), runtime.profiling()
    t0 = time.perf_counter() if debug or profiling else 0.0
    run_exe = entry.exe
    if run_exe.device_kind == "gpu":
        outs = run_exe.run(entry.compiled, [t.gpu(run_exe) for t in tensors])
        result = from_gpu(outs[0], run_exe, entry.shape, entry.dtype)
    else:
        outs = run_exe.run(entry.compiled, [t.host() for t in tensors])
        result = from_host(outs[0], entry.home)
    if debug or profiling:
        run_exe.wait()
        ms = (time.perf_counter() - t0) * 1e3
        if profiling:
            runtime.record_kernel(runtime.KernelRecord(op, run_exe.name, [t.shape for t in tensors], [entry.shape],
                                                     ms, result.nbytes))
        if debug:
            mem = engine.memory()
            instrument.debug_logger().info(
                "%-22s %s %s -> %s %s  %.3f ms  +%d B  (%d tensors, %d B live; %d B on gpu)", op, run_exe.name,
                [t.shape for t in tensors], entry.shape, entry.dtype, ms, result.nbytes, mem.num_tensors,
                mem.num_bytes, mem.num_bytes_on_gpu)
    if check and result.dtype.kind == "f" and np.isnan(result.data_sync()).any():
        raise NaNError(f"{op} on {run_exe.name} with inputs {[t.shape for t in tensors]} produced NaN in its "
                       f"{entry.shape} output (check_nans is on)")
    return result
