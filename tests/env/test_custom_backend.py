"""A third backend written only against the contract (gpulite.backends.base), as docs/architecture.md's
"Adding a backend" walks through: registered, chosen automatically, running a zoo model through the
Interpreter (against LiteRT), eager ops, memory accounting, profiling and declining an op.

``TraceBackend`` runs the numpy kernels it inherits with ``copy_kernels("cpu", name)`` over one
host arena, unfused, and keeps a trace of the nodes it ran. It imports from gpulite only the
contract, the kernel table, the CPU kernels' context (their calling convention) and the errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gpulite
from gpulite import ops, runtime
from gpulite.backends.base import (
    Backend,
    DeviceKind,
    EagerExecutor,
    Executable,
    GpuControl,
    GpuIO,
    Observer,
    copy_graph,
)
from gpulite.backends.cpu.context import CpuContext
from gpulite.backends.kernels import get_kernel
from gpulite.environment import env
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph
from gpulite.graph.plan import MemoryPlan
from tests.compare import assert_same
from tests.models.test_zoo_models import model_path, random_input

NAME = "trace"


def _steps(graph: Graph, arrays: dict[int, np.ndarray], kernels: str) -> list:
    out = []
    for n in graph.nodes:
        factory = get_kernel(n.op, kernels)
        if factory is None:
            raise UnsupportedOpError(n.op, n.index, kernels, "no kernel registered under this backend")
        out.append(factory(n, CpuContext(graph, n, arrays, 1)))
    return out


class TraceExecutable:
    gpu_io: GpuIO | None = None

    def __init__(self, graph: Graph, plan: MemoryPlan, kernels: str, trace: list[str]) -> None:
        self.plan, self.trace, self.nodes = plan, trace, list(graph.nodes)
        self.arena = np.zeros(max(plan.arena_bytes, 1), np.uint8)
        self.arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            if t.const is not None:
                self.arrays[t.index] = t.const
            elif t.index in plan.offsets:
                off = plan.offsets[t.index]
                self.arrays[t.index] = self.arena[off:off + t.nbytes].view(t.dtype).reshape(t.shape)
        self.steps = _steps(graph, self.arrays, kernels)

    def stores(self, i: int) -> bool:
        return i in self.plan.offsets

    def write(self, i: int, arr: np.ndarray) -> None:
        np.copyto(self.arrays[i], arr)

    def read(self, i: int) -> np.ndarray:
        return self.arrays[i].copy()

    def invoke(self, observer: Observer | None = None) -> None:
        for node, step in zip(self.nodes, self.steps, strict=True):
            step()
            self.trace.append(f"{node.op}#{node.index}")
            if observer is not None:
                observer.node_done(node, 0.0, self.arrays.get)

    def wait(self) -> None:
        pass

    def close(self) -> None:
        self.arrays.clear()

    def describe(self) -> dict[str, Any]:
        return {"traced_nodes": len(self.trace)}


class TraceEager:
    device_kind: DeviceKind = "cpu"

    def __init__(self, name: str) -> None:
        self.name, self.closed, self.held = name, False, 0

    def compile(self, graph: Graph) -> tuple:
        arrays = {t.index: t.const if t.const is not None else np.zeros(t.shape, t.dtype) for t in graph.tensors}
        (run,) = _steps(graph, arrays, self.name)
        ins, outs = [arrays[i] for i in graph.inputs], [arrays[o] for o in graph.outputs]
        self.held += sum(a.nbytes for a in ins + outs)
        return run, ins, outs

    def run(self, compiled: tuple, inputs: list[Any]) -> list[Any]:
        run, ins, outs = compiled
        for slot, x in zip(ins, inputs, strict=True):
            np.copyto(slot, x)
        run()
        return [o.copy() for o in outs]

    def discard(self, compiled: tuple) -> None:
        self.held -= sum(a.nbytes for a in compiled[1] + compiled[2])

    def flush(self) -> None:
        pass

    def wait(self) -> None:
        pass

    def allocated_bytes(self) -> int:
        return self.held  # reported as the backend's allocated bytes by gpulite.memory()

    def free_bytes(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


class TraceBackend:
    name = NAME
    device_kind: DeviceKind = "cpu"
    gpu_control: GpuControl | None = None

    def __init__(self, num_threads: int | None = None) -> None:
        self.trace: list[str] = []

    def prepare(self, graph: Graph) -> Graph:
        return copy_graph(graph)  # no fusions of its own

    def compile(self, graph: Graph, plan: MemoryPlan) -> TraceExecutable:
        return TraceExecutable(graph, plan, self.name, self.trace)

    def eager(self) -> TraceEager:
        return TraceEager(self.name)

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"backend_kind": "trace"}


@pytest.fixture
def trace():
    """TraceBackend registered above every built-in (priority 10) with the cpu kernels; removed afterwards."""
    made: list[TraceBackend] = []

    def factory(**kw: Any) -> TraceBackend:
        made.append(TraceBackend(**kw))
        return made[-1]
    assert gpulite.register_backend(NAME, factory, 10)
    gpulite.copy_kernels("cpu", NAME)
    yield made
    if NAME in gpulite.list_backends():
        gpulite.remove_backend(NAME)
    for op in list(gpulite.get_kernels_for_backend(NAME)):
        gpulite.unregister_kernel(op, NAME)


def test_the_parts_satisfy_the_contract():
    b = TraceBackend()
    assert isinstance(b, Backend) and isinstance(b.eager(), EagerExecutor)
    g = Graph([], [], (), ())
    assert isinstance(b.compile(g, MemoryPlan({}, {}, 0, 0, {})), Executable)


def test_it_is_chosen_automatically_and_runs_a_zoo_model_like_litert(trace):
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    assert gpulite.get_backend() == NAME
    assert f"auto: {NAME!r} is the highest-ranked backend that starts" in gpulite.backend_choice()
    path = str(model_path("face_detection_short_range"))
    env().set("auto_measure", False)  # Interpreter's auto follows the ranking then, not what it measures
    it = gpulite.Interpreter(model_path=path, backend="auto")
    assert it.backend == NAME
    it.allocate_tensors()
    ref = LiteRT(model_path=path)
    ref.allocate_tensors()
    x = random_input(tuple(it.get_input_details()[0]["shape"]), 0)
    for i in (it, ref):
        i.set_tensor(i.get_input_details()[0]["index"], x)
        i.invoke()
    for d, e in zip(it.get_output_details(), ref.get_output_details(), strict=True):
        assert_same(it.get_tensor(d["index"]), ref.get_tensor(e["index"]), rtol=1e-4, what=d["name"])
    backend = trace[-1]  # the Interpreter's own instance
    assert backend.trace == [f"{n.op}#{n.index}" for n in it.graph.nodes]
    plan = it.get_plan()
    assert plan["backend"] == NAME and plan["backend_kind"] == "trace" and plan["traced_nodes"] == len(it.graph.nodes)
    assert it.precision == "fp32"
    with pytest.raises(RuntimeError, match="needs backend='webgpu'"):
        it.get_output_gpu(it.get_output_details()[0]["index"])

    # profile() and debug logging see every node through the observer
    p = gpulite.profile(it.invoke)
    assert [k.name for k in p.kernels] == backend.trace[-len(it.graph.nodes):]
    assert {k.backend for k in p.kernels} == {NAME}


def test_eager_ops_memory_accounting_and_removal(trace):
    assert gpulite.set_backend(NAME)
    m0 = gpulite.memory()
    with gpulite.tidy():
        a = gpulite.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        y = gpulite.keep(ops.relu(ops.sub(ops.mul(a, 2.0), 3.0)))
    assert y.backend == NAME
    np.testing.assert_array_equal(y.numpy(), np.maximum(np.arange(6).reshape(2, 3) * 2.0 - 3.0, 0))
    assert a.is_disposed and not y.is_disposed
    m = gpulite.memory()
    mine = m.backends[NAME]
    assert mine.num_tensors - m0.backends.get(NAME, gpulite.engine.BackendMemory()).num_tensors == 1
    assert mine.num_bytes >= y.nbytes and mine.num_bytes_on_gpu == 0
    assert mine.num_bytes_allocated_on_gpu == runtime.eager_executor(NAME).allocated_bytes() > 0
    gpulite.remove_backend(NAME)
    assert y.is_disposed and NAME not in gpulite.memory().backends
    assert gpulite.get_backend() != NAME


def test_an_op_without_a_kernel_is_declined_with_its_name_node_and_backend(trace):
    from gpulite.testing.tflite_writer import ModelBuilder

    gpulite.unregister_kernel("ADD", NAME)
    mb = ModelBuilder()
    a = mb.input("a", (2, 3), np.float32)
    y = mb.tensor("y", (2, 3), np.float32)
    mb.op("ADD", [a, a], [y])
    mb.output(y)
    it = gpulite.Interpreter(model_content=mb.build(), backend=NAME)
    with pytest.raises(UnsupportedOpError, match=f"ADD.*{NAME}|{NAME}.*ADD"):
        it.allocate_tensors()
    assert gpulite.set_backend(NAME)
    with pytest.raises(UnsupportedOpError, match="ADD"):  # eager: a cpu-type backend has no fallback
        ops.add(gpulite.tensor([1.0]), gpulite.tensor([2.0]))
