"""What a CPU kernel factory is given: :class:`CpuContext` (its node's arrays), the shared :class:`ScratchPool`
and the executable's :class:`Resources`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.base import KernelContext
from gpulite.graph.ir import Graph, Node


class CpuContext(KernelContext):
    """What a CPU kernel factory sees: its node's tensors as arrays plus their metadata.

    ``input(i)`` is the array of the node's i-th input (an arena view, or the constant's
    value), ``output(i)`` the preallocated array to write into. ``in_info(i)`` and
    ``out_info(i)`` give shape, dtype and quantization. Kernels must write outputs in
    place (``out=`` or ``out[...] =``) and never rebind them.

    A kernel whose output shape depends on the data (a *bounded* output, sized for its upper
    bound) writes its leading elements and records their shape through :meth:`extent_setter`
    in ``extents`` (the plan's ``MemoryPlan.extents``, which ``get_tensor`` reads).
    """

    def __init__(self, graph: Graph, node: Node, arrays: dict[int, np.ndarray], num_threads: int,
                 scratch: ScratchPool | None = None, resources: Resources | None = None,
                 extents: dict[int, tuple[int, ...]] | None = None) -> None:
        super().__init__(graph, node)
        self._arrays = arrays
        self.num_threads = max(1, int(num_threads or 1))
        self.scratch = scratch if scratch is not None else ScratchPool()
        self.resources = resources if resources is not None else Resources()
        self._extents = extents if extents is not None else {}

    def input(self, i: int) -> np.ndarray:
        return self._arrays[self.node.inputs[i]]

    def output(self, i: int) -> np.ndarray:
        return self._arrays[self.node.outputs[i]]

    def extent_setter(self, i: int) -> Callable[[tuple[int, ...]], None]:
        """A function recording output i's shape of this invoke (for a bounded output)."""
        extents, tensor = self._extents, self.node.outputs[i]

        def record(shape: tuple[int, ...]) -> None:
            extents[tensor] = shape
        return record


class ScratchPool:
    """Scratch memory shared by the kernels of one executable.

    Kernels run one after another, so a scratch buffer that a kernel only uses inside one
    ``run`` (im2col patches, an epilogue's temporary) can be the same memory for every
    node. ``get(key, shape, dtype)`` returns a view of the pool's buffer for ``key`` (use
    a distinct key per thread part and per purpose), growing it for a bigger request;
    buffers only grow, and a kernel keeps the views it was given, so an earlier, smaller
    buffer stays alive only as long as views of it do.
    """

    MIN_BYTES = 1 << 20

    def __init__(self) -> None:
        self._bufs: dict[object, np.ndarray] = {}

    def get(self, key: object, shape: tuple[int, ...] | int, dtype) -> np.ndarray:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buf = self._bufs.get(key)
        if buf is None or buf.nbytes < nbytes:
            buf = np.empty(max(nbytes, self.MIN_BYTES if buf is None else 2 * buf.nbytes) + 64, np.uint8)
            self._bufs[key] = buf
        off = (-buf.ctypes.data) % 64  # cache-line aligned
        return buf[off:off + nbytes].view(dtype).reshape(shape)


class Resources:
    """The resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) of one executable and of
    the subgraphs its control-flow nodes run, which share them as LiteRT's subgraphs share the
    interpreter's: a variable's id by ``(container, shared_name)``, its value by id (None until
    it is first assigned)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], int] = {}
        self.values: dict[int, np.ndarray] = {}
        self.names: list[str] = []

    def handle(self, container: str, name: str) -> int:
        """The id of variable ``name`` in ``container``, made on first use."""
        key = (container, name)
        if key not in self.ids:
            self.ids[key] = len(self.ids)
            self.names.append(name)
        return self.ids[key]
