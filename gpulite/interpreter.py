"""A ``tflite_runtime``/``ai_edge_litert`` compatible Interpreter over gpulite's backends.

Existing code switches by changing the import::

    from gpulite import Interpreter          # was: from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path="face_detection_short_range", backend="cpu")  # a zoo name or a .tflite path
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    scores = it.get_tensor(it.get_output_details()[1]["index"])

Lifecycle: the model is read and the graph folded at construction; ``allocate_tensors``
resolves every shape for the current input shapes and folds the shape computations of
dynamic-shape models (:mod:`gpulite.graph.resolve`; nodes after a shape that comes from the
data, WHERE's, run on the cpu after each invoke), hands the result to the backend's
``prepare`` (its fusions, on a copy), plans the prepared graph's
memory and compiles every kernel (an op without a kernel raises ``UnsupportedOpError``
here, not at invoke); ``invoke`` runs the compiled plan; ``close`` releases what
``allocate_tensors`` built (GPU buffers on the webgpu backend). The Interpreter talks to
the backend only through the contract of :mod:`gpulite.backends.base`.

GPU-resident I/O (a GPU backend such as ``"webgpu"``, see docs/webgpu.md): ``bind_input`` takes an input
from a ``wgpu.GPUBuffer``, ``get_output_gpu`` hands out an output without reading it back,
``outputs_on_gpu=True`` skips every output readback and ``ensure_readable`` reads one back on
demand; ``transfer_stats`` counts the bytes moved.

Threads: an Interpreter is not thread-safe, as in LiteRT (which raises ``RuntimeError`` when one
is invoked while another thread is inside one of its calls). A call that starts while another
thread is inside a call of the same Interpreter raises :class:`~gpulite.errors.ConcurrentUseError`
(a ``RuntimeError``) at once, so no call ever runs on state another thread is changing. Use one
Interpreter per thread (separate Interpreters may run in parallel), or hold a lock around each
``set_tensor``/``invoke``/``get_tensor`` sequence: without one, another thread's ``set_tensor``
between this thread's ``set_tensor`` and ``invoke`` is the application's race, as in LiteRT.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import operator
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from gpulite import instrument, measure, runtime, zoo
from gpulite.backends.base import EagerExecutor, Executable, GpuIO
from gpulite.backends.kernels import get_kernel
from gpulite.errors import ConcurrentUseError, ModelError, ShapeError, UnsupportedOpError, brief
from gpulite.graph import passes, tensor_lists
from gpulite.graph.ir import Graph
from gpulite.graph.plan import MemoryPlan, plan_memory, topological_order
from gpulite.graph.resolve import Tail, resolve
from gpulite.model.reader import Model, load, shape_problem

log = logging.getLogger(__name__)

_UNSAFE = (
    "There is at least 1 reference to internal data in the interpreter in the form of a numpy array "
    "or slice. Be sure to only hold the function returned from tensor() if you are using raw data access."
)

_F = TypeVar("_F", bound=Callable[..., Any])


def _exclusive(method: _F) -> _F:
    """Make ``method`` (of an Interpreter, or of a SignatureRunner: its ``_it``) refuse to start
    while another thread is inside an exclusive call of the same Interpreter
    (:class:`ConcurrentUseError`); calls nested in the same thread go on."""
    name = method.__qualname__

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        it = self if isinstance(self, Interpreter) else self._it
        if not it._busy.acquire(blocking=False):
            raise _refusal(it, name)
        outer = it._busy_in is None
        if outer:
            it._busy_in = (name, threading.current_thread())
        try:
            return method(self, *args, **kwargs)
        finally:
            if outer:
                it._busy_in = None
            it._busy.release()

    return call  # type: ignore[return-value]


def _refusal(it: Interpreter, name: str) -> ConcurrentUseError:
    method, thread = it._busy_in or ("a call", None)
    return ConcurrentUseError(
        f"{name}() was called in thread {threading.current_thread().name!r} while thread "
        f"{thread.name if thread is not None else '?'!r} is inside {method}() of the same Interpreter. An "
        "Interpreter is not thread-safe (as in LiteRT): use one Interpreter per thread, or hold a lock around "
        "each set_tensor/invoke/get_tensor sequence")


class Interpreter:
    """Run a .tflite model; see the module docstring.

    Parameters
    ----------
    model_path : str or Path, optional
        A .tflite file, or a model zoo name such as ``"face_detection_short_range"``.
    model_content : bytes, optional
        The model file's bytes (instead of ``model_path``).
    experimental_delegates : list, optional
        Accepted for compatibility and ignored: gpulite's GPU path is ``backend="webgpu"``,
        not a TFLite delegate. A non-empty list logs a notice.
    num_threads : int, optional
        Threads the CPU backend may use (numpy's BLAS decides its own; kept for parity).
    backend : str, optional
        Where kernels run: ``"cpu"``, ``"webgpu"``, a backend registered with
        ``gpulite.register_backend``, or ``"auto"``: ``set_backend``'s or ``GPULITE_BACKEND``'s
        backend if one was chosen, else the fastest backend measured for this model on this
        machine (on first use a few invokes on each usable backend, cached: :func:`measured_backend`,
        :mod:`gpulite.measure`), else (``GPULITE_AUTO_MEASURE=0``) the highest-ranked backend that
        starts; :attr:`backend_reason` says which and why. Default None: the backend chosen
        with ``set_backend``/``GPULITE_BACKEND`` if any, else ``"cpu"``, so that code written
        for ``tflite_runtime`` behaves the same.
    **backend_options
        For ``"webgpu"``: ``device`` (a ``wgpu.GPUDevice`` of the application's, a
        ``GpuDevice`` or an adapter name), ``precision`` (``"fp32"``/``"fp16"``),
        ``outputs_on_gpu`` (bool), ``cpu_ops`` and ``quantized`` (``"float"``/``"exact"``);
        see ``WebGpuBackend``. ``"cpu"`` takes none.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_content: bytes | None = None,
        experimental_delegates: list | None = None,
        num_threads: int | None = None,
        experimental_op_resolver_type: Any = None,
        experimental_preserve_all_tensors: bool = False,
        *,
        backend: str | None = None,
        **backend_options: Any,
    ) -> None:
        if (model_path is None) == (model_content is None):
            raise ValueError("give exactly one of model_path and model_content")
        if num_threads is not None and (not isinstance(num_threads, int) or num_threads < -1):
            raise ValueError(f"num_threads must be an int >= -1, got {num_threads!r}")
        if experimental_delegates:
            log.info("experimental_delegates are ignored by gpulite; use backend='webgpu' for the GPU")
        if model_path is not None:
            model_path = zoo.resolve(model_path)
            self._model: Model = load(model_path)
        else:
            if not isinstance(model_content, (bytes, bytearray, memoryview)):
                raise TypeError(f"model_content must be bytes, got {type(model_content).__name__}")
            self._model = load(model_content)
        self._num_threads = None if num_threads in (None, -1) else num_threads
        self._model_graph = self._build_graph()  # as the file has it; never changed
        name, self._backend_reason = backend, _reason(backend)
        if backend == "auto" and not runtime.chosen_explicitly():
            source = {"model_path": model_path} if model_path is not None else {"model_content": model_content}
            measured, self._backend_reason = measured_backend(source, self._model, self._model_graph,
                                                              self._num_threads, backend_options)
            name = measured or "auto"
        self._backend_name, self._backend = runtime.make_backend(name, num_threads=self._num_threads,
                                                                 options=backend_options)
        self._input_shapes = {i: self._model_graph.tensors[i].shape for i in self._model_graph.inputs}
        self._source = self._model_graph  # resolved for _input_shapes when the graph is made
        self._tail = Tail()  # nodes after a data-dependent shape: run on the cpu after each invoke
        self._late: dict[int, np.ndarray] = {}  # what the tail made in the last invoke
        self._folder: EagerExecutor | None = None  # runs cpu kernels on constants (see _evaluate)
        self._graph: Graph | None = None  # the backend's prepared graph, made on first need
        self._exe: Executable | None = None
        self._plan: MemoryPlan | None = None
        self._guard: np.ndarray | None = None
        self._busy = threading.RLock()  # held by the thread inside an exclusive call (see _exclusive)
        self._busy_in: tuple[str, threading.Thread] | None = None  # (method, thread) of the outermost such call

    # -- construction -------------------------------------------------------------------
    def _build_graph(self) -> Graph:
        """The model's graph, constants folded, nodes in run order (what backends prepare: fusion is theirs).

        Every other subgraph of the model is built the same way into ``graph.subgraphs``, for the
        control-flow nodes that run them."""
        graphs = [Graph.from_model(self._model, i) for i in range(len(self._model.subgraphs))]
        for g in graphs:
            passes.fold_constants(g)
            tensor_lists.rewrite_list_writes(g)  # loop bodies' list writes: static shapes (graph/tensor_lists.py)
            g.nodes = topological_order(g)
            g.subgraphs = graphs
        return graphs[0]

    @property
    def backend(self) -> str:
        return self._backend_name

    @property
    def backend_reason(self) -> str:
        """Why :attr:`backend` runs this model: requested, the default, or what ``auto`` measured (or ranked)."""
        return self._backend_reason

    @property
    def graph(self) -> Graph:
        """The graph the backend runs (its ``prepare``'s result, made on first use); nodes in run order."""
        if self._graph is None:
            # Every node checked against its op's table entry, shapes set, shape computations folded.
            self._source, self._tail = resolve(self._model_graph, self._input_shapes, self._evaluate,
                                               self._backend_name)
            self._graph = self._backend.prepare(self._source)
        return self._graph

    @property
    def _current(self) -> Graph:
        """The prepared graph once made, else the model's: for lookups that need no preparing."""
        return self._source if self._graph is None else self._graph

    @property
    def memory_plan(self) -> MemoryPlan | None:
        return self._plan

    # -- safety ---------------------------------------------------------------------------
    def _safe_to_run(self) -> bool:
        # One reference from self, one from getrefcount's argument; more are tensor() views.
        return self._guard is None or sys.getrefcount(self._guard) == 2

    def _ensure_safe(self) -> None:
        if not self._safe_to_run():
            raise RuntimeError(_UNSAFE)

    def _allocated(self, what: str) -> Executable:
        if self._exe is None:
            raise RuntimeError(f"{what} needs allocate_tensors() to be called first")
        return self._exe

    # -- LiteRT API -----------------------------------------------------------------------
    @_exclusive
    def allocate_tensors(self) -> None:
        self._ensure_safe()
        if self._exe is not None:
            # As LiteRT's AllocateTensors when no input was resized since: nothing to plan again,
            # so inputs, variable tensors (an LSTM's state) and bindings are kept.
            return
        graph = self.graph
        for n in self._tail.nodes:
            if get_kernel(n.op, "cpu") is None:
                raise UnsupportedOpError(n.op, n.index, self._backend_name, "it reads a tensor whose shape comes from "
                                         "the data, so it runs on the cpu after each invoke; the cpu has no kernel")
        exe = self._backend.compile(graph, plan_memory(graph, graph.nodes))
        self._exe, self._plan = exe, exe.plan
        self._guard = np.frombuffer(memoryview(exe.arena), dtype=np.uint8)
        self._set_variables(exe, initial=True)

    def _set_variables(self, exe: Executable, initial: bool) -> None:
        """Variable tensors to zeros (an int8 one's zero point, :meth:`TensorInfo.reset_value`), or
        (``initial``) to the values a model initialises them with (the arena starts zeroed, so only
        those and nonzero reset values need writing)."""
        for t in self._current.tensors:
            if not (t.is_variable and exe.stores(t.index)):
                continue
            value = t.initial if initial and t.initial is not None else t.reset_value()
            if value is t.initial or not initial or value.any():
                exe.write(t.index, value)

    def _release_exe(self) -> None:
        # The previous plan's GPU buffers go now, not whenever the garbage collector runs.
        exe, self._exe, self._guard, self._late = self._exe, None, None, {}
        if exe is not None:
            exe.close()

    @_exclusive
    def invoke(self) -> None:
        self._ensure_safe()
        exe = self._allocated("invoke()")
        self._late = {}
        exe.invoke(instrument.observer(self.graph, self._backend_name))
        if self._tail.nodes:
            reads = {i: _extent(exe.read(i), self._shape(i)) for i in self._tail.reads}
            self._late = self._tail.run(self._source, reads, self._evaluate)

    @_exclusive
    def reset_all_variables(self) -> None:
        """Set every variable tensor (the LSTM states converters write) to zeros, as LiteRT's
        ``reset_all_variables`` does (even one the model initialised with a constant; that value
        is restored only by ``allocate_tensors``). Resource variables are kept."""
        self._ensure_safe()
        self._set_variables(self._allocated("reset_all_variables()"), initial=False)

    def _tensor_index(self, tensor_index: Any) -> int:
        try:
            i = operator.index(tensor_index)  # ints and numpy integers; never a float or str truncated
        except TypeError:
            raise TypeError(f"tensor index must be an int, got {type(tensor_index).__name__} "
                            f"{brief(tensor_index)}") from None
        if not 0 <= i < len(self._source.tensors):
            raise ValueError(f"tensor index {i} out of range: the model has {len(self._source.tensors)} tensors")
        return i

    def _shape(self, i: int) -> tuple[int, ...]:
        """Tensor i's current shape: as resized, as resolved, or as the last invoke made it."""
        if i in self._input_shapes:
            return self._input_shapes[i]
        if i in self._late:
            return self._late[i].shape
        if self._plan is not None and i in self._plan.extents:
            return self._plan.extents[i]
        return self._source.tensors[i].shape

    def _details(self, i: int) -> dict[str, Any]:
        t = self._source.tensors[i]
        q = t.quant
        if q is None:
            scales, zps, dim, quant = np.zeros(0, np.float32), np.zeros(0, np.int32), 0, (0.0, 0)
        else:
            scales, zps, dim = q.scale.astype(np.float32), q.zero_point.astype(np.int32), q.axis
            quant = (float(q.scale[0]), int(q.zero_point[0])) if q.scale.size == 1 else (0.0, 0)
        src = self._model.subgraphs[0].tensors[i]
        dtype = src.dtype.type if src.dtype != np.object_ else np.bytes_
        return {
            "name": t.name,
            "index": i,
            "shape": np.array(self._shape(i), np.int32),
            # LiteRT reports a tensor's current dims as its signature when the file stores no
            # shape_signature, so after a resize the signature follows the new shape there.
            "shape_signature": np.array(t.shape_signature if src.has_shape_signature else self._shape(i), np.int32),
            "dtype": dtype,
            "quantization": quant,
            "quantization_parameters": {
                "scales": scales, "zero_points": zps, "quantized_dimension": dim, "block_size": 0,
            },
            "sparsity_parameters": _sparsity_details(src.sparsity),
        }

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict[str, Any]]:
        if subgraph_index != 0:
            raise ValueError(f"subgraph_index is out of range: {subgraph_index}; gpulite runs subgraph 0")
        return [self._details(i) for i in range(len(self._source.tensors))]

    def get_input_details(self) -> list[dict[str, Any]]:
        return [self._details(i) for i in self._current.inputs]

    def get_output_details(self) -> list[dict[str, Any]]:
        return [self._details(i) for i in self._outputs()]

    def _outputs(self) -> list[int]:
        """The model's outputs, then any other output of the graph but those it keeps only for the
        after-invoke tail to read."""
        model = self._model_graph.outputs
        extra = set(self._tail.reads)
        return [*model, *(i for i in self._current.outputs if i not in model and i not in extra)]

    @_exclusive
    def set_tensor(self, tensor_index: int, value: Any) -> None:
        """Copy ``value`` into a tensor (normally an input); dtype and shape must match exactly."""
        i = self._tensor_index(tensor_index)
        exe = self._allocated("set_tensor()")
        t = self._current.tensors[i]
        if t.is_const:
            raise ValueError(f"tensor {i} ({t.name!r}) is a constant of the model and cannot be set")
        arr = np.asarray(value)
        if arr.dtype != t.dtype and arr.dtype.newbyteorder("=") == t.dtype:
            arr = arr.astype(t.dtype)  # the same type in the other byte order: take the values
        if arr.dtype != t.dtype:
            raise ValueError(
                f"Cannot set tensor: got value of type {arr.dtype.name.upper()} but expected type "
                f"{t.dtype.name.upper()} for tensor {i}, name: {t.name}"
            )
        if arr.shape != t.shape:
            raise ValueError(
                f"Cannot set tensor: dimension mismatch; got shape {list(arr.shape)} but expected "
                f"{list(t.shape)} for tensor {i}, name: {t.name}"
            )
        if not exe.stores(i):
            raise ValueError(f"tensor {i} ({t.name!r}) is not stored by the plan (it is never read)")
        exe.write(i, arr)

    @_exclusive
    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        """A copy of a tensor's value (inputs, outputs and constants; intermediates may be reused)."""
        i = self._tensor_index(tensor_index)
        t = self._current.tensors[i]
        if t.is_const:
            return np.array(t.const, copy=True)
        if i in self._tail.makes:
            return self._late_value(i).copy()
        exe = self._allocated("get_tensor()")
        if not exe.stores(i):
            raise ValueError(f"tensor {i} ({t.name!r}) holds no data in the plan")
        return _extent(exe.read(i), self._shape(i))

    def _evaluate(self, graph: Graph) -> list[np.ndarray]:
        """Run a one-node graph of constants on the CPU kernels: how :func:`resolve` folds a node and
        the tail runs. The executor is this Interpreter's own (kernels share its scratch memory)."""
        if self._folder is None:
            self._folder = runtime.make_backend("cpu", num_threads=self._num_threads)[1].eager()
        compiled = self._folder.compile(graph)
        try:
            return self._folder.run(compiled, [])
        finally:
            self._folder.discard(compiled)

    def _late_value(self, i: int) -> np.ndarray:
        if i not in self._late:
            raise ValueError(f"tensor {i} ({self._source.tensors[i].name!r}) follows a shape that comes from the data; "
                             "it has a value once invoke() has run")
        return self._late[i]

    def tensor(self, tensor_index: int):
        """A function returning a numpy view of the tensor's buffer (no copy).

        As in LiteRT, do not hold the returned array across ``invoke()``/``allocate_tensors()``:
        they raise ``RuntimeError`` while such a view is alive, because reallocation would
        leave it pointing at freed memory.
        """
        i = self._tensor_index(tensor_index)

        def view() -> np.ndarray:
            t = self._current.tensors[i]
            if t.is_const or i in self._tail.makes:
                v = (t.const if t.is_const else self._late_value(i)).view()
                v.flags.writeable = False
                return v
            self._allocated("tensor()")
            assert self._plan is not None and self._guard is not None
            if i not in self._plan.offsets:
                raise ValueError(f"tensor {i} ({t.name!r}) holds no data in the plan")
            off = self._plan.offsets[i]
            return _extent(self._guard[off : off + t.nbytes].view(t.dtype), self._shape(i))

        return view

    @_exclusive
    def resize_tensor_input(self, input_index: int, tensor_size: Any, strict: bool = False) -> None:
        self._ensure_safe()
        i = self._tensor_index(input_index)
        if i not in self._current.inputs:
            raise ValueError(f"tensor {i} is not an input; inputs are {list(self._current.inputs)}")
        size = np.asarray(tensor_size)
        if size.ndim != 1 or not np.issubdtype(size.dtype, np.integer) or (size < 0).any():
            raise ValueError(f"tensor_size must be a 1-D list of non-negative ints, got {tensor_size!r}")
        t = self._current.tensors[i]
        new = tuple(int(d) for d in size)
        problem = shape_problem(new)
        if problem:
            raise ShapeError(f"cannot resize tensor {i} to {list(new)}: {problem}")
        if strict:
            sig = t.shape_signature
            if len(sig) != len(new) or any(s != -1 and s != d for s, d in zip(sig, new, strict=True)):
                raise ValueError(
                    f"strict resize of tensor {i} to {list(new)}: only dimensions that are -1 in the "
                    f"shape signature {list(sig)} may change"
                )
        if new != self._input_shapes[i]:
            self._input_shapes[i] = new
            self._graph = None
            self._release_exe()

    def get_signature_list(self) -> dict[str, dict[str, list[str]]]:
        return {
            s.key: {"inputs": list(s.inputs), "outputs": list(s.outputs)} for s in self._model.signatures
        }

    def get_signature_runner(self, signature_key: str | None = None) -> SignatureRunner:
        sigs = {s.key: s for s in self._model.signatures}
        if signature_key is None:
            if len(sigs) != 1:
                raise ValueError(
                    f"SignatureDef signature_key is None and model has {len(sigs)} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef"
                )
            signature_key = next(iter(sigs))
        if signature_key not in sigs:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}"; the model has {sorted(sigs)}')
        if sigs[signature_key].subgraph_index != 0:
            raise ValueError(f"signature {signature_key!r} runs subgraph {sigs[signature_key].subgraph_index}; "
                             "gpulite runs subgraph 0 only")
        return SignatureRunner(self, sigs[signature_key])

    # -- GPU-resident I/O, device, warm-up (GPU backends) ---------------------------------
    def _gpu_io(self, what: str) -> GpuIO:
        if self._backend.device_kind != "gpu":
            raise RuntimeError(f"{what} needs backend='webgpu' (or another GPU backend); this interpreter runs on "
                               f"{self._backend_name!r}")
        io = self._allocated(what).gpu_io
        if io is None:
            raise RuntimeError(f"{what}: backend {self._backend_name!r} has no GPU-resident I/O")
        return io

    def _output_index(self, tensor_index: Any) -> int:
        i = self._tensor_index(tensor_index)
        outputs = self._outputs()
        if i not in outputs:
            raise ValueError(f"tensor {i} ({self._current.tensors[i].name!r}) is not an output; the output tensor "
                             f"indices (get_output_details()[k]['index']) are {list(outputs)}")
        return i

    @_exclusive
    def get_output_gpu(self, tensor_index: int) -> Any:
        """An output left in GPU memory, without reading it back (TF.js ``dataToGPU``).

        Parameters
        ----------
        tensor_index : int
            The output's tensor index, ``get_output_details()[k]["index"]`` (as ``get_tensor``).

        Returns
        -------
        GpuTensor
            The ``wgpu.GPUBuffer`` (owned by this interpreter), byte offset, byte size, shape,
            dtype and layout. Valid until the next ``invoke``, ``allocate_tensors``,
            ``resize_tensor_input``, ``recover`` or ``close``; then it raises
            ``StaleTensorError``. ``t.copy()`` gives a buffer the caller owns;
            ``await t.data()`` / ``t.data_sync()`` read it back.

        Raises
        ------
        DeviceLostError
            When the device is lost.
        """
        i = self._output_index(tensor_index)
        if i in self._tail.makes:
            raise ValueError(f"output {i} is computed on the cpu after each invoke (it follows a shape that comes "
                             "from the data), so it has no GPU buffer; read it with get_tensor()")
        return self._gpu_io("get_output_gpu()").gpu_tensor(i)

    @_exclusive
    def bind_input(self, tensor_index: int, gpu_buffer: Any, *, offset: int = 0, layout: str = "NHWC") -> None:
        """Take input ``tensor_index`` from a GPU buffer at every invoke, with no CPU copy.

        The buffer's bytes from ``offset`` are copied into the interpreter's arena on the GPU,
        at the start of each ``invoke``'s command encoder (TFLite ``bindGlBufferToTensor``).
        The binding lasts until ``bind_input(i, None)``, ``set_tensor(i, ...)`` or the next
        ``allocate_tensors``/``recover``; the interpreter holds a reference to the buffer
        but never destroys it. After unbinding, the input is its host copy again (uploaded once).

        Parameters
        ----------
        tensor_index : int
            An input's tensor index (``get_input_details()[k]["index"]``); float32 inputs only.
        gpu_buffer : wgpu.GPUBuffer or None
            Created on this interpreter's device (see ``Interpreter(device=...)``), with
            ``COPY_SRC`` usage, holding dense NHWC float32 data. None unbinds.
        offset : int
            Byte offset of element 0; a multiple of 4.
        layout : {"NHWC"}
            The buffer's layout; only dense NHWC float32 exists today.

        Raises
        ------
        DeviceMismatchError
            When the buffer belongs to another device (the message names both).
        ValueError, TypeError
            For a non-input, a non-float32 tensor, a missing ``COPY_SRC`` usage, a misaligned
            offset or a buffer too small for the tensor.
        """
        i = self._tensor_index(tensor_index)
        self._gpu_io("bind_input()").bind(i, gpu_buffer, offset=offset, layout=layout)

    @_exclusive
    def ensure_readable(self, tensor_index: int) -> None:
        """Make ``tensor()`` views of tensor i current, reading it back only if needed.

        TFLite's ``EnsureTensorDataIsReadable``: with ``outputs_on_gpu=True`` (or a bound
        input) the host copy is not kept current; ``get_tensor`` calls this itself.
        """
        i = self._tensor_index(tensor_index)
        io = self._gpu_io("ensure_readable()")
        if not self._current.tensors[i].is_const:
            io.ensure_readable(i)

    def transfer_stats(self) -> dict[str, int]:
        """Bytes uploaded and read back since ``allocate_tensors`` (constants included), and invokes."""
        return self._gpu_io("transfer_stats()").transfer_stats()

    @property
    def precision(self) -> str:
        """The precision in force: ``"fp16"`` (float16 weights, f16 products in the matrix products and depthwise
        convolutions, float32 activations and accumulation) when it
        was requested on a webgpu device with shader-f16, else ``"fp32"``; see ``get_plan()``."""
        return str(self._backend.describe().get("precision", "fp32"))

    @_exclusive
    def warmup(self) -> float:
        """Run one invoke on the current inputs and wait for the GPU; returns its seconds.

        Pipelines are compiled at ``allocate_tensors``; some drivers (lavapipe among them)
        compile shaders for real at their first dispatch, which this pays for. It overwrites
        outputs and makes earlier ``GpuTensor`` handles stale like any invoke.
        """
        exe = self._allocated("warmup()")
        start = time.perf_counter()
        self.invoke()
        exe.wait()
        return time.perf_counter() - start

    @_exclusive
    def recover(self, *, device: Any = None) -> None:
        """Rebuild on a working device after ``DeviceLostError`` (GPU backends only).

        Parameters
        ----------
        device : wgpu.GPUDevice, GpuDevice or str, optional
            Where to rebuild. Default: the shared device this interpreter was asked for
            (re-created once lost), or for an application's own device, gpulite's shared
            device on the same adapter.

        Inputs set with ``set_tensor`` are carried over; bindings and ``GpuTensor`` handles
        (which belong to the old device) are dropped.
        """
        control = self._backend.gpu_control
        if control is None:
            raise RuntimeError(f"recover() needs backend='webgpu' (or another GPU backend); this interpreter runs on "
                               f"{self._backend_name!r}")
        self._ensure_safe()
        old = self._exe
        io = None if old is None else old.gpu_io
        keep = {} if io is None else io.host_inputs()
        self._release_exe()
        control.replace_device(device)
        if old is not None:
            self.allocate_tensors()
            exe = self._allocated("recover()")
            for i, value in keep.items():
                exe.write(i, value)

    @_exclusive
    def close(self) -> None:
        """Release what ``allocate_tensors`` built; the interpreter needs it again to run."""
        self._ensure_safe()
        self._release_exe()

    def __enter__(self) -> Interpreter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_plan(self) -> dict[str, Any]:
        """What runs where: nodes, arena bytes and (on webgpu) partitions and crossings."""
        plan = {
            "backend": self._backend_name,
            "backend_reason": self._backend_reason,
            "nodes": len(self.graph.nodes),
            "arena_bytes": self._plan.arena_bytes if self._plan else None,
            "intermediate_bytes": self._plan.total_bytes if self._plan else None,
        }
        plan.update(self._backend.describe())
        if self._exe is not None:
            plan.update(self._exe.describe())
        if self._tail.nodes:  # after a shape that comes from the data: on the cpu, after each invoke
            plan["cpu_after_invoke"] = [n.index for n in self._tail.nodes]
        return plan

    def __repr__(self) -> str:
        return f"Interpreter(backend={self._backend_name!r}, nodes={len(self._current.nodes)})"


def _reason(backend: str | None) -> str:
    """Why ``Interpreter(backend=backend)`` runs where it does, when ``auto`` measures nothing."""
    if backend is None:
        if runtime.chosen_explicitly():
            return f"not given: the active backend ({runtime.backend_choice()})"
        return "not given: 'cpu', as tflite_runtime (backend='auto' chooses by measurement)"
    if backend == "auto":
        return f"auto: {runtime.backend_choice()}" if runtime.chosen_explicitly() else ""
    return "requested"


def measured_backend(source: dict[str, Any], model: Model, graph: Graph, num_threads: int | None,
                     options: dict[str, Any]) -> tuple[str | None, str]:
    """``(backend, why)`` for ``backend="auto"``: the fastest backend measured (or cached) for this
    model on this machine (:mod:`gpulite.measure`), or ``(None, why)`` when nothing was measured
    and the registry's ranking decides.

    The key: the model file's SHA-256, its inputs' shapes and dtypes, ``num_threads`` and the
    backend options, and the machine. Each candidate is an Interpreter of the model on that
    backend, its inputs set once from a seeded generator; one call is ``invoke`` and reading every
    output (so a GPU's work is waited for).
    """
    def ranked(why: str) -> tuple[None, str]:
        return None, f"auto ({why}): {runtime.backend_choice()}"

    if not measure.enabled():
        return ranked("the auto_measure flag is off, so the ranking decides")
    names, notes = measure.candidates()
    if len(names) < 2:
        return ranked(f"one usable backend, nothing to measure: {'; '.join(notes) or names}")
    digest = hashlib.sha256(model.data.data).hexdigest()
    inputs = [(list(graph.tensors[i].shape), graph.tensors[i].dtype.name) for i in graph.inputs]
    label = Path(str(source["model_path"])).name if "model_path" in source else "model_content"
    shapes = ", ".join(f"{'x'.join(map(str, s)) or 'scalar'} {d}" for s, d in inputs)
    subject = f"{label} (sha256 {digest[:12]}; inputs {shapes or 'none'})"
    plain = {k: v if isinstance(v, (str, int, float, bool, type(None))) else type(v).__name__
             for k, v in sorted(options.items())}

    def make(name: str) -> measure.Runner:
        it = Interpreter(**source, num_threads=num_threads, backend=name, **options)
        try:
            it.allocate_tensors()
            rng = np.random.default_rng(0)
            for d in it.get_input_details():
                it.set_tensor(d["index"], _seeded(d, rng))
            outputs = [d["index"] for d in it.get_output_details()]
        except BaseException:
            it.close()
            raise

        def run() -> None:
            it.invoke()
            for i in outputs:
                it.get_tensor(i)
        return measure.Runner(run, it.close)

    choice = measure.choose(subject, names, notes, make, unit="invoke",
                            identity={"sha256": digest, "inputs": inputs, "num_threads": num_threads,
                                      "options": plain})
    if choice is None:  # measure.choose has nothing to measure: checked above
        return ranked("nothing measured")
    if not choice.name:
        return ranked(f"every candidate failed while measured: {choice.reason}")
    return choice.name, choice.reason


def _seeded(details: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """An input for the measurement: floats uniform in [0, 1), quantized integers over their whole range,
    other integers (indices, sizes) and everything else zero."""
    dtype, shape = np.dtype(details["dtype"]), tuple(int(d) for d in details["shape"])
    if np.issubdtype(dtype, np.floating):
        return rng.random(shape, dtype=np.float32).astype(dtype)
    if np.issubdtype(dtype, np.integer) and details["quantization_parameters"]["scales"].size:
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return np.zeros(shape, dtype)


def _extent(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The first elements of ``value`` (a tensor's slot) in ``shape``: all of them but for a bounded
    tensor, whose slot holds its upper bound."""
    if value.shape == shape:  # the common case: the slot is the tensor
        return value
    return value.reshape(-1)[:math.prod(shape)].reshape(shape)


def _sparsity_details(sp) -> dict[str, Any]:
    if sp is None:
        return {}
    dims = []
    for d in sp.dim_metadata:
        if d.format == 0:
            dims.append({"format": 0, "dense_size": d.dense_size})
        else:
            dims.append({"format": 1, "array_segments": d.array_segments, "array_indices": d.array_indices})
    out = {"traversal_order": np.array(sp.traversal_order, np.int32)}
    if sp.block_map:  # LiteRT lists block_map only for block-sparse tensors
        out["block_map"] = np.array(sp.block_map, np.int32)
    out["dim_metadata"] = dims
    return out


class SignatureRunner:
    """Callable for one SignatureDef: ``runner(x=array) -> {"output_name": array}``."""

    def __init__(self, interpreter: Interpreter, sig) -> None:
        self._it, self._sig = interpreter, sig

    @_exclusive  # one call: another thread cannot slip in between its set_tensor, invoke and get_tensor
    def __call__(self, **kwargs: Any) -> dict[str, np.ndarray]:
        ins = self._sig.inputs
        if len(kwargs) != len(ins):
            raise ValueError(
                f"Invalid number of inputs provided for running a SignatureDef, expected {len(ins)} "
                f"vs provided {len(kwargs)}"
            )
        for name, value in kwargs.items():
            if name not in ins:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef; expected one of {sorted(ins)}")
            shape = np.shape(value)
            if tuple(shape) != self._it._input_shapes[ins[name]]:
                self._it.resize_tensor_input(ins[name], list(shape))
        if self._it._exe is None:
            self._it.allocate_tensors()
        for name, value in kwargs.items():
            self._it.set_tensor(ins[name], value)
        self._it.invoke()
        return {name: self._it.get_tensor(i) for name, i in self._sig.outputs.items()}

    def get_input_details(self) -> dict[str, dict[str, Any]]:
        return {n: self._it._details(i) for n, i in self._sig.inputs.items()}

    def get_output_details(self) -> dict[str, dict[str, Any]]:
        return {n: self._it._details(i) for n, i in self._sig.outputs.items()}


__all__ = ["Interpreter", "ModelError", "SignatureRunner"]
