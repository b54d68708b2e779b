"""The backend contract: what the runtime, the Interpreter and instrumentation may ask of a backend.

A backend is registered by name with a factory (:mod:`gpulite.backends.registry`); the
factory returns an object satisfying :class:`Backend`. Nothing outside a backend's own
package looks at anything else of it: no attribute probing, no backend-specific keys.

Lifecycle of a model on a backend::

    graph = backend.prepare(source)              # a NEW graph; nodes in run order
    plan = plan_memory(graph, graph.nodes)       # the Interpreter plans the prepared graph
    exe = backend.compile(graph, plan)           # Executable; UnsupportedOpError for an op it cannot run
    exe.write(i, x); exe.invoke(observer); exe.read(o)
    exe.close()

Eager ops (:mod:`gpulite.ops`) go through ``backend.eager()``, an :class:`EagerExecutor` that
compiles one-node graphs and runs them on its own buffers (host arrays on a CPU backend,
device buffers on a GPU backend).

Declining: :meth:`Backend.compile`, kernel factories and :meth:`EagerExecutor.compile` all
raise :class:`~gpulite.errors.UnsupportedOpError` (op, node index, backend, reason) for an op
they cannot run; there is no other way to decline.

Instrumentation (``debug``, ``check_nans``, ``gpulite.profile``) is an :class:`Observer`
passed to :meth:`Executable.invoke`: the executable calls it after each node with the time
the node took and a way to read the node's outputs as they are at that moment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.plan import MemoryPlan

DeviceKind = Literal["cpu", "gpu"]
ReadTensor = Callable[[int], "np.ndarray | None"]


class KernelContext:
    """What every backend's kernel factory sees of its node: the graph, the node, and its
    tensors' metadata (shape, dtype, quantization, constant value). Backends subclass it
    with their own ways to reach the data (:class:`~gpulite.backends.cpu.context.CpuContext`:
    numpy arrays; :class:`~gpulite.backends.webgpu.context.GpuContext`: arena references)."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self.graph, self.node = graph, node

    @property
    def num_inputs(self) -> int:
        return len(self.node.inputs)

    def has_input(self, i: int) -> bool:
        """False for an omitted optional input (index -1) or one past the node's inputs."""
        return i < len(self.node.inputs) and self.node.inputs[i] >= 0

    def in_info(self, i: int) -> TensorInfo:
        return self.graph.tensors[self.node.inputs[i]]

    def out_info(self, i: int) -> TensorInfo:
        return self.graph.tensors[self.node.outputs[i]]

    def const(self, i: int) -> np.ndarray | None:
        """The constant value of input i, or None when it is computed at run time."""
        return self.in_info(i).const if self.has_input(i) else None


class Observer(Protocol):
    """Told about every node an :class:`Executable` runs, in run order."""

    def node_done(self, node: Node, ms: float, read: ReadTensor) -> None:
        """``node`` has finished, taking ``ms`` milliseconds (on a GPU: up to its completion).

        ``read(i)`` returns tensor ``i`` (one of the node's outputs) as it is now, or None
        when it is not stored. It is valid only during this call.
        """
        ...


class GpuIO(Protocol):
    """GPU-resident I/O of a compiled plan (``Interpreter.bind_input``, ``get_output_gpu``, ...)."""

    def gpu_tensor(self, i: int) -> Any:
        """Output ``i`` left on the device, as a ``GpuTensor`` handle; valid until the next invoke."""
        ...

    def bind(self, i: int, buffer: Any, *, offset: int = 0, layout: str = "NHWC") -> None:
        """Take input ``i`` from a device buffer at every invoke; None unbinds."""
        ...

    def ensure_readable(self, i: int) -> None:
        """Make the host arena hold tensor ``i``, reading it back only if needed."""
        ...

    def transfer_stats(self) -> dict[str, int]:
        """Bytes uploaded and read back since compile (constants included), and invokes."""
        ...

    def host_inputs(self) -> dict[int, np.ndarray]:
        """Copies of the inputs as last set from the host (bound inputs left out), for ``recover``."""
        ...


class GpuControl(Protocol):
    """What a GPU backend offers besides compiling: moving to another device after a loss."""

    def replace_device(self, device: Any = None) -> None:
        """Compile on ``device`` from now on (None: the device it was asked for, re-created)."""
        ...


@runtime_checkable
class Executable(Protocol):
    """A compiled plan: a host arena laid out by ``plan``, and the code that runs the nodes.

    Attributes
    ----------
    plan : MemoryPlan
        The plan the arena is laid out by (tensor index -> byte offset).
    arena : numpy.ndarray
        The host arena (uint8); ``Interpreter.tensor()`` hands out views into it.
    gpu_io : GpuIO or None
        GPU-resident I/O, on backends whose executables have it.
    """

    plan: MemoryPlan
    arena: np.ndarray

    @property
    def gpu_io(self) -> GpuIO | None: ...

    def stores(self, i: int) -> bool:
        """Whether tensor ``i`` (not a constant) has a place in the arena."""
        ...

    def write(self, i: int, arr: np.ndarray) -> None:
        """Set tensor ``i`` (an input) from ``arr``, already checked for dtype and shape."""
        ...

    def read(self, i: int) -> np.ndarray:
        """A copy of tensor ``i``."""
        ...

    def invoke(self, observer: Observer | None = None) -> None:
        """Run every node in order; tell ``observer`` about each one if given."""
        ...

    def wait(self) -> None:
        """Block until all submitted work has finished (no-op where nothing is asynchronous)."""
        ...

    def close(self) -> None:
        """Release what compile built (idempotent)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Facts for ``Interpreter.get_plan()``."""
        ...


@runtime_checkable
class EagerExecutor(Protocol):
    """Runs one-node graphs for :mod:`gpulite.ops`.

    On a ``"cpu"`` executor ``run`` takes and returns numpy arrays; on a ``"gpu"`` one
    (``device_kind``), device buffers, and the executor is also a :class:`GpuEagerExecutor`.
    """

    name: str
    device_kind: DeviceKind
    closed: bool

    def compile(self, graph: Graph) -> Any:
        """Compile the one-node ``graph``; raises ``UnsupportedOpError`` when it cannot run it."""
        ...

    def run(self, compiled: Any, inputs: list[Any]) -> list[Any]:
        """Run ``compiled`` on one buffer per runtime input; returns new output buffers it owns."""
        ...

    def discard(self, compiled: Any) -> None:
        """Release a compiled op (evicted from the op cache)."""
        ...

    def flush(self) -> None:
        """Submit recorded work."""
        ...

    def wait(self) -> None:
        """Block until all submitted work has finished."""
        ...

    def allocated_bytes(self) -> int:
        """Device bytes held (pooled buffers and compiled ops)."""
        ...

    def free_bytes(self) -> int:
        """Of those, free pooled buffers."""
        ...

    def close(self) -> None:
        """Drop pending work and free what it holds (the backend was removed)."""
        ...


class GpuEagerExecutor(EagerExecutor, Protocol):
    """An eager executor whose ``device_kind`` is ``"gpu"``: eager tensors keep buffers of it."""

    def upload(self, array: np.ndarray) -> Any:
        """A buffer holding ``array``'s bytes (C order)."""
        ...

    def read(self, buf: Any, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of ``buf`` as a new uint8 array (waits for the device)."""
        ...

    async def read_async(self, buf: Any, nbytes: int) -> np.ndarray:
        """:meth:`read` without blocking the event loop."""
        ...

    def release(self, buf: Any) -> None:
        """Give a tensor's buffer back."""
        ...


@runtime_checkable
class Backend(Protocol):
    """A registered backend's instance; see the module docstring.

    Attributes
    ----------
    name : str
        The registered name; kernels are looked up under it (the runtime sets it).
    device_kind : {"cpu", "gpu"}
        Where its tensors live: eager tensors of a ``"gpu"`` backend keep their data on
        the device.
    gpu_control : GpuControl or None
        Device replacement, on GPU backends.
    """

    name: str
    device_kind: DeviceKind

    @property
    def gpu_control(self) -> GpuControl | None: ...

    def prepare(self, graph: Graph) -> Graph:
        """A new graph rewritten for this backend (fusions); ``graph`` is left as it was.

        Both graphs' ``nodes`` are in run order; tensor indices of ``graph`` keep their
        meaning (a rewrite may append tensors).
        """
        ...

    def compile(self, graph: Graph, plan: MemoryPlan) -> Executable:
        """Compile a prepared graph, whose ``nodes`` are the run order, over ``plan``."""
        ...

    def eager(self) -> EagerExecutor:
        """A new executor for eager ops on this backend."""
        ...

    def close(self) -> None:
        """Release what the backend holds (its device stays if it is shared)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Backend-level facts for ``Interpreter.get_plan()`` (``precision`` on a GPU backend)."""
        ...



def copy_graph(graph: Graph) -> Graph:
    """A copy of ``graph`` a backend's ``prepare`` may rewrite: new node objects and a new
    tensor list; the tensors themselves are shared (rewrites append, never edit)."""
    nodes = [dataclasses.replace(n) for n in graph.nodes]
    return Graph(list(graph.tensors), nodes, graph.inputs, graph.outputs, graph.name, graph.subgraphs,
                 dict(graph.views))
