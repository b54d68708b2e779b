"""VAR_HANDLE, ASSIGN_VARIABLE and READ_VARIABLE: the resource variables of TensorFlow's stateful
models (``tf.Variable`` converted with resource variables on; their initial values are assigned
by a CALL_ONCE subgraph).

A variable lives in the executable's :class:`~gpulite.backends.cpu.context.Resources`, shared with
the subgraphs its control-flow nodes run, for as long as the executable (so across invokes, until
the next ``allocate_tensors``). VAR_HANDLE writes the variable's id into its resource tensor (one
byte, as the reader keeps RESOURCE tensors); ASSIGN_VARIABLE stores a copy of its value;
READ_VARIABLE copies the value into its output, whose stored shape it must have (gpulite's shapes
are static).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.errors import ModelError, ShapeError, UnsupportedOpError
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op

_MAX_ID = 255  # ids are stored in the one byte of a RESOURCE tensor
_RESOURCE = int(sg.TensorType.RESOURCE)


@register_kernel(Op.VAR_HANDLE, "cpu")
def var_handle(node, ctx):
    opts = node.options
    rid = ctx.resources.handle(getattr(opts, "container", "") or "", getattr(opts, "shared_name", "") or "")
    if rid > _MAX_ID:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"more than {_MAX_ID + 1} resource variables")
    info = ctx.out_info(0)
    if info.type_code != _RESOURCE or info.nbytes < 1:
        raise ModelError(f"node {node.index} (VAR_HANDLE): output 0 (tensor {info.index}, {info.name!r}) must be a "
                         f"resource tensor, got type code {info.type_code} {list(info.shape)}")
    out = ctx.output(0).reshape(-1).view(np.uint8)

    def run():
        out[0] = rid
    return run


def _variable_id(handle: np.ndarray) -> int:
    return int(handle.reshape(-1).view(np.uint8)[0])


def _handle(node, ctx) -> np.ndarray:
    """The node's input 0, checked to be a resource tensor (as VAR_HANDLE writes)."""
    info = ctx.in_info(0)
    if info.type_code != _RESOURCE or info.nbytes < 1:
        raise ModelError(f"node {node.index} ({node.op}): input 0 (tensor {info.index}, {info.name!r}) must be a "
                         f"resource tensor (VAR_HANDLE's output), got type code {info.type_code} {list(info.shape)}")
    return ctx.input(0)


@register_kernel(Op.ASSIGN_VARIABLE, "cpu")
def assign_variable(node, ctx):
    handle, value, values = _handle(node, ctx), ctx.input(1), ctx.resources.values

    def run():
        rid = _variable_id(handle)
        old = values.get(rid)
        if old is not None and old.shape == value.shape and old.dtype == value.dtype:
            np.copyto(old, value)
        else:
            values[rid] = np.array(value, copy=True)
    return run


@register_kernel(Op.READ_VARIABLE, "cpu")
def read_variable(node, ctx):
    handle, out, res = _handle(node, ctx), ctx.output(0), ctx.resources

    def run():
        rid = _variable_id(handle)
        value = res.values.get(rid)
        name = res.names[rid] if rid < len(res.names) else f"#{rid}"
        if value is None:
            raise ModelError(f"node {node.index} (READ_VARIABLE) reads resource variable {name!r} before anything "
                             "assigned it")
        if value.shape != out.shape or value.dtype != out.dtype:
            raise ShapeError(f"node {node.index} (READ_VARIABLE): variable {name!r} holds {value.dtype} "
                             f"{list(value.shape)}, but the output is stored as {out.dtype} {list(out.shape)}")
        np.copyto(out, value)
    return run
